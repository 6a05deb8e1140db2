package ui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// The sort menu is htop's F6: a list of the orders, the current one
// marked, to pick from with the arrows and enter (s still steps through
// them without a menu).

// sortMenuKeys drive the menu.
type sortMenuKeys struct {
	Up, Down, Pick, Cancel key.Binding
}

func newSortMenuKeys() sortMenuKeys {
	return sortMenuKeys{
		Up:     key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑↓", "choose")),
		Down:   key.NewBinding(key.WithKeys("down", "j")),
		Pick:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "sort")),
		Cancel: key.NewBinding(key.WithKeys("esc", "f6"), key.WithHelp("esc", "cancel")),
	}
}

func (k sortMenuKeys) ShortHelp() []key.Binding { return []key.Binding{k.Up, k.Pick, k.Cancel} }

func (k sortMenuKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

func (m *Model) openSortMenu() {
	m.mode, m.sortPick = modeSortMenu, m.sort
}

// sortMenuKey handles a key in the menu.
func (m *Model) sortMenuKey(msg tea.KeyMsg) tea.Cmd {
	k := newSortMenuKeys()
	switch {
	case key.Matches(msg, m.keys.ForceQuit):
		return m.quit(msg)
	case key.Matches(msg, k.Up):
		m.sortPick = (m.sortPick + numSortKeys - 1) % numSortKeys
	case key.Matches(msg, k.Down):
		m.sortPick = (m.sortPick + 1) % numSortKeys
	case key.Matches(msg, k.Pick):
		m.mode = modeNormal
		if m.sortPick != m.sort {
			m.sort, m.reverse = m.sortPick, false
		}
		m.rebuild()
		m.setStatus("sorted by "+m.sortName(), false)
	case key.Matches(msg, k.Cancel):
		m.mode = modeNormal
	}
	return nil
}

// sortMenuView draws the menu in the table's place, exactly h lines.
func (m *Model) sortMenuView(h int) string {
	lines := []string{m.styles.Title.Render("Sort by")}
	for k := range numSortKeys {
		mark := "  "
		if k == m.sort {
			mark = sortArrow(k, m.reverse) + " "
		}
		line := mark + k.String()
		if k == m.sortPick {
			lines = append(lines, m.styles.Selected.Render("> "+line))
		} else {
			lines = append(lines, "  "+line)
		}
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	for i, l := range lines[:h] {
		lines[i] = ansi.Truncate(l, m.width, "")
	}
	return strings.Join(lines[:h], "\n")
}
