package ui

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// The full key help (?) takes the body of the screen, as htop's F1 does:
// each kind of key is a column drawn by bubbles/help, the columns flow
// into as many bands as the width needs, the filter terms follow, and the
// page scrolls when the body is shorter than it. Any window of the
// minimum size reaches every key.

// helpGap separates two columns of keys in a band.
const helpGap = "   "

// helpKeyMap is the key help of the screen as it is: the replay's adds the
// time keys.
func (m *Model) helpKeyMap() help.KeyMap {
	if m.bar != nil {
		return replayHelp{KeyMap: m.keys, time: m.bar.keys}
	}
	return m.keys
}

// helpLines are the whole page, every line at most the window wide.
func (m *Model) helpLines() []string {
	h := m.help
	h.Width = 0 // lines are cut here, not by help
	var lines, band []string
	bandW := 0
	flush := func() {
		if len(band) > 0 {
			lines = append(lines, strings.Split(lipgloss.JoinHorizontal(lipgloss.Top, band...), "\n")...)
		}
		band, bandW = nil, 0
	}
	for _, g := range m.helpKeyMap().FullHelp() {
		var on []key.Binding
		for _, b := range g {
			if b.Enabled() {
				on = append(on, b)
			}
		}
		if len(on) == 0 {
			continue
		}
		col := h.FullHelpView([][]key.Binding{on})
		w := lipgloss.Width(col)
		if len(band) > 0 && bandW+len(helpGap)+w > m.width {
			flush()
			lines = append(lines, "")
		}
		if len(band) > 0 {
			band = append(band, helpGap)
			bandW += len(helpGap)
		}
		band = append(band, col)
		bandW += w
	}
	flush()
	lines = append(lines, "")
	lines = append(lines, strings.Split(m.filterSyntax(), "\n")...)
	for i, l := range lines {
		l = ansi.Truncate(strings.TrimRight(l, " "), m.width, "…")
		lines[i] = l + strings.Repeat(" ", m.width-ansi.StringWidth(l))
	}
	return lines
}

// helpView draws the page in exactly height lines from the scroll offset.
func (m *Model) helpPageView(height int) string {
	lines := m.helpLines()
	m.helpOffset = max(min(m.helpOffset, len(lines)-height), 0)
	end := min(m.helpOffset+height, len(lines))
	out := lines[m.helpOffset:end]
	for len(out) < height {
		out = append(out, strings.Repeat(" ", m.width))
	}
	return strings.Join(out, "\n")
}

// helpBodyHeight is the lines the page has on screen.
func (m *Model) helpBodyHeight() int { return m.table.height + 1 + m.detailH + m.panelH }

// helpFooter is the footer under the page: how to scroll it (when it is
// longer than the window), close it and quit.
func (m *Model) helpFooter() []key.Binding {
	scroll := key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑↓ pgup pgdn", "scroll"),
		key.WithDisabled())
	scroll.SetEnabled(len(m.helpLines()) > m.helpBodyHeight())
	return []key.Binding{scroll, m.keys.CloseHelp, m.keys.Quit}
}

// helpKey handles a key while the page is open: the moving keys scroll
// it, esc closes it; any other key closes it too and then acts, so the
// screen never changes unseen behind the page. It reports whether the
// key was the page's.
func (m *Model) helpKey(msg tea.KeyMsg) bool {
	k := m.keys
	page := max(m.helpBodyHeight()-1, 1)
	switch {
	case key.Matches(msg, k.ShowHelp, k.CloseHelp, k.Quit, k.ForceQuit):
		return false
	case key.Matches(msg, k.Up):
		m.helpOffset--
	case key.Matches(msg, k.Down):
		m.helpOffset++
	case key.Matches(msg, k.PageUp):
		m.helpOffset -= page
	case key.Matches(msg, k.PageDown):
		m.helpOffset += page
	case key.Matches(msg, k.Top):
		m.helpOffset = 0
	case key.Matches(msg, k.Bottom):
		m.helpOffset = len(m.helpLines())
	case key.Matches(msg, k.Close):
		m.closeHelp()
	default:
		m.closeHelp()
		return false
	}
	m.helpOffset = max(min(m.helpOffset, len(m.helpLines())-m.helpBodyHeight()), 0)
	return true
}

func (m *Model) closeHelp() {
	m.help.ShowAll = false
	m.keys.showingHelp(false)
	m.helpOffset = 0
}
