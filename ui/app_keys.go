package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
	"github.com/sandtop/sandtop/teardown"
)

// intervals are the steps `+` and `-` move through.
var intervals = []time.Duration{
	250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
	3 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
}

// key handles a key press in the current mode.
func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	if m.tooSmall() {
		return m.tooSmallKey(msg)
	}
	switch m.mode {
	case modeConfirm:
		return m.confirmKey(msg)
	case modeFilter, modeSearch:
		return m.inputKey(msg)
	case modeJump:
		return m.jumpKey(msg)
	case modeSortMenu:
		return m.sortMenuKey(msg)
	}
	// bubbletea hands over runes read together as one message ("jjj"
	// when a key repeats faster than it is read); outside a text field
	// each is a key of its own. A paste is not keys at all.
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 {
		if msg.Paste {
			return nil
		}
		var cmds []tea.Cmd
		for _, r := range msg.Runes {
			cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}))
		}
		return tea.Batch(cmds...)
	}
	if !key.Matches(msg, m.keys.Quit, m.keys.ForceQuit) {
		m.quitArmed = false
	}
	m.setStatus("", false)
	if m.help.ShowAll && m.helpKey(msg) {
		return nil
	}
	if m.detail.focused && m.detailH > 0 && m.detailKey(msg) {
		return nil
	}
	if m.panel.open && m.panel.focused && m.panelH > 0 && m.panelKey(msg) {
		return nil
	}
	k := &m.keys
	t := &m.table
	switch {
	case key.Matches(msg, k.Quit, k.ForceQuit):
		return m.quit(msg)
	case key.Matches(msg, k.KillNow):
		m.killNow()
	case m.bar != nil && m.bar.owns(msg):
		return m.timeKey(msg)
	case m.keys.disabledKill(msg):
		m.setStatus("read-only mode: killing is disabled", true)
	case key.Matches(msg, k.Up):
		t.move(-1)
	case key.Matches(msg, k.Down):
		t.move(1)
	case key.Matches(msg, k.PageUp):
		t.pageUp()
	case key.Matches(msg, k.PageDown):
		t.pageDown()
	case key.Matches(msg, k.Top):
		t.top()
	case key.Matches(msg, k.Bottom):
		t.bottom()
	case key.Matches(msg, k.Expand):
		m.expand()
	case key.Matches(msg, k.Collapse):
		m.collapse()
	case key.Matches(msg, k.ExpandAll):
		m.expandAll()
	case key.Matches(msg, k.ScrollLeft):
		m.scrollCommands(-1)
	case key.Matches(msg, k.ScrollRight):
		m.scrollCommands(1)
	case key.Matches(msg, k.Details):
		m.showDetail, m.detail.focused = !m.showDetail, false
	case key.Matches(msg, k.Search):
		// F3 again after a search: the next match, the search line
		// open on it to edit.
		m.mode = modeSearch
		m.input.SetValue(m.lastSearch)
		m.input.CursorEnd()
		if m.lastSearch != "" {
			m.jump(m.table.cursor + 1)
		}
		return m.input.Focus()
	case key.Matches(msg, k.Filter):
		m.mode = modeFilter
		m.input.SetValue(m.filterQ)
		m.input.CursorEnd()
		return m.input.Focus()
	case key.Matches(msg, k.Tree):
		m.tree = !m.tree
		m.rebuild()
	case key.Matches(msg, k.Sort):
		// Each order starts in its natural direction: a reverse is for
		// the key it was asked on.
		m.sort, m.reverse = (m.sort+1)%numSortKeys, false
		m.rebuild()
		m.setStatus("sorted by "+m.sortName(), false)
	case key.Matches(msg, k.SortMenu):
		m.openSortMenu()
	case key.Matches(msg, k.Reverse):
		m.reverse = !m.reverse
		m.rebuild()
		m.setStatus("sorted by "+m.sortName(), false)
	case key.Matches(msg, k.Host):
		m.showHost = !m.showHost
		m.rebuild()
	case key.Matches(msg, k.Tag):
		m.tag()
	case key.Matches(msg, k.Copy):
		return m.copyID()
	case key.Matches(msg, k.Untag):
		clear(m.tags)
	case key.Matches(msg, k.Kill):
		return m.kill()
	case key.Matches(msg, k.Refresh):
		if cmd := m.refreshNow(); cmd != nil {
			return cmd
		}
		m.setStatus("a refresh is already running", false)
	case key.Matches(msg, k.Faster, k.Slower):
		return m.setInterval(key.Matches(msg, k.Faster))
	case key.Matches(msg, k.ShowHelp):
		m.help.ShowAll = true
		k.showingHelp(true)
	case key.Matches(msg, k.CloseHelp):
		m.closeHelp()
	case key.Matches(msg, k.SwitchFocus):
		m.cycleFocus()
	case key.Matches(msg, k.Close):
		m.escape()
	}
	return nil
}

// tooSmallKey handles a key while the window is too small to draw
// anything but a line saying so: no key may act on what the operator
// cannot see (a confirmation drawn nowhere, a row off the screen), so only
// quitting and help act; everything else waits for a bigger window.
// Quitting is ctrl+c in a text field or a dialog, where q is typed text or
// a dialog's key.
func (m *Model) tooSmallKey(msg tea.KeyMsg) tea.Cmd {
	k := &m.keys
	switch {
	case key.Matches(msg, k.ForceQuit):
		if m.mode == modeConfirm {
			m.closeConfirm()
		}
		return m.quit(msg)
	case m.mode != modeNormal:
	case key.Matches(msg, k.Quit):
		return m.quit(msg)
	case key.Matches(msg, k.ShowHelp, k.CloseHelp):
		m.help.ShowAll = !m.help.ShowAll
		k.showingHelp(m.help.ShowAll)
	}
	return nil
}

// panelKey handles the keys the teardown log takes while it has the
// focus; it reports false for keys the main screen should handle.
func (m *Model) panelKey(msg tea.KeyMsg) bool {
	k := m.keys
	switch {
	case key.Matches(msg, k.SwitchFocus):
		m.cycleFocus()
	case key.Matches(msg, k.Close):
		m.escape()
	case key.Matches(msg, k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom):
		m.panel.scroll(k, msg)
	default:
		return false
	}
	return true
}

// cycleFocus moves the focus with tab: from the list to the detail pane
// (when open), to the teardown log (when open), back to the list.
func (m *Model) cycleFocus() {
	switch {
	case !m.detail.focused && !m.panel.focused && m.detailH > 0:
		m.detail.focused = true
	case !m.panel.focused && m.panelH > 0:
		m.detail.focused, m.panel.focused = false, true
	default:
		m.detail.focused, m.panel.focused = false, false
	}
}

// detailKey handles the keys the detail pane takes while it has the
// focus, the teardown log's: the moving keys scroll it, esc closes it.
func (m *Model) detailKey(msg tea.KeyMsg) bool {
	k := m.keys
	r, c := m.table.selected(), m.rowCtx()
	page := max(m.detailH-4, 1)
	switch {
	case key.Matches(msg, k.SwitchFocus):
		m.cycleFocus()
	case key.Matches(msg, k.Close, k.Details):
		m.showDetail, m.detail.focused = false, false
	case key.Matches(msg, k.Up):
		m.detail.scroll(r, c, m.width, m.detailH, -1)
	case key.Matches(msg, k.Down):
		m.detail.scroll(r, c, m.width, m.detailH, 1)
	case key.Matches(msg, k.PageUp):
		m.detail.scroll(r, c, m.width, m.detailH, -page)
	case key.Matches(msg, k.PageDown):
		m.detail.scroll(r, c, m.width, m.detailH, page)
	case key.Matches(msg, k.Top):
		m.detail.offset = 0
	case key.Matches(msg, k.Bottom):
		m.detail.scroll(r, c, m.width, m.detailH, 1<<20)
	default:
		return false
	}
	return true
}

// escape closes the innermost thing open: the teardown log, the detail
// pane, then the filter.
func (m *Model) escape() {
	switch {
	case m.panel.open:
		sum := m.panel.batch
		if !m.panel.close() {
			m.setStatus("a teardown is still running: its log stays until it ends", true)
		} else if sum.targets > 0 {
			// The log is gone; what it came to stays in sight.
			m.lastTeardown, m.lastFailed = "last teardown: "+sum.String(), sum.survivors > 0 || sum.failed > 0
		}
	case m.showDetail:
		m.showDetail = false
	case m.filterQ != "":
		m.setFilter("")
	}
}

// quit ends the screen; while a teardown runs, the first press only
// warns, naming the key pressed, and the second stops the teardowns (no
// further signal; they still thaw, verify and write their record).
func (m *Model) quit(msg tea.KeyMsg) tea.Cmd {
	if m.panel.running > 0 && !m.quitArmed {
		m.quitArmed = true
		again := msg.String()
		if key.Matches(msg, m.keys.ForceQuit) {
			again = "Ctrl-C"
		}
		m.setStatus(fmt.Sprintf("a teardown is running: %s again stops it before SIGKILL and quits; %s sends SIGKILL now", again, m.keys.KillNow.Help().Key), true)
		return nil
	}
	m.stopRuns = m.panel.running > 0
	return tea.Quit
}

func (m *Model) setInterval(faster bool) tea.Cmd {
	next := m.interval
	if faster {
		for i := len(intervals) - 1; i >= 0; i-- {
			if intervals[i] < m.interval {
				next = intervals[i]
				break
			}
		}
	} else {
		for _, d := range intervals {
			if d > m.interval {
				next = d
				break
			}
		}
	}
	m.interval = next
	m.setStatus("refreshing every "+next.String(), false)
	if m.scanning {
		return nil // the scan's return arms a tick at the new interval
	}
	m.tickGen++
	return m.tick(m.interval, m.tickGen)
}

func (m *Model) expand() {
	r := m.table.selected()
	if r == nil {
		return
	}
	switch {
	case (r.kind == rowSandbox || r.kind == rowHost) && !r.open:
		m.expanded[r.key.sandbox] = true
		m.rebuild()
	case r.kind == rowSandbox || r.kind == rowHost:
		m.table.move(1)
	}
}

// collapse folds a group, or moves from a process to its group.
func (m *Model) collapse() {
	r := m.table.selected()
	if r == nil {
		return
	}
	switch {
	case (r.kind == rowSandbox || r.kind == rowHost) && r.open:
		delete(m.expanded, r.key.sandbox)
		m.rebuild()
	case r.kind == rowMember || r.kind == rowHostProc:
		if i := find(m.table.rows, rowKey{sandbox: r.key.sandbox}); i >= 0 {
			m.table.cursor = i
			m.table.clamp()
		}
	}
}

// expandAll opens every sandbox when one is closed, else closes them all.
func (m *Model) expandAll() {
	if m.view == nil {
		return
	}
	open := true
	for i := range m.table.rows {
		if r := &m.table.rows[i]; r.kind == rowSandbox && !r.open {
			open = false
			break
		}
	}
	if open {
		clear(m.expanded)
	} else {
		for _, sb := range m.view.Sandboxes {
			m.expanded[sb.Key()] = true
		}
	}
	m.rebuild()
}

// tag toggles the tag on the selected sandbox or process subtree and
// moves down, as htop's space does.
func (m *Model) tag() {
	r := m.table.selected()
	if r == nil || r.kind == rowHost {
		return
	}
	if m.tags[r.key] {
		delete(m.tags, r.key)
	} else {
		m.tags[r.key] = true
	}
	m.table.move(1)
}

// inputKey edits the filter (live) or the search line.
func (m *Model) inputKey(msg tea.KeyMsg) tea.Cmd {
	ik := newInputKeys(m.mode == modeSearch)
	search := m.mode == modeSearch
	switch {
	case key.Matches(msg, m.keys.ForceQuit):
		return m.quit(msg)
	case !search && key.Matches(msg, ik.Accept) && m.fltErr != nil:
		return nil // the error under the prompt says what to fix
	case key.Matches(msg, ik.Accept):
		m.mode = modeNormal
		m.input.Blur()
		return nil
	case key.Matches(msg, ik.Cancel):
		m.mode = modeNormal
		m.input.Blur()
		if !search {
			m.setFilter("")
			m.fltErr = nil
		}
		return nil
	case search && key.Matches(msg, ik.Next):
		m.jump(m.table.cursor + 1)
		return nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	if search {
		m.jump(m.table.cursor)
	} else {
		m.setFilter(m.input.Value())
	}
	return cmd
}

// jump moves the cursor to the next row, from start on, that matches the
// search line.
func (m *Model) jump(start int) {
	q := strings.ToLower(strings.TrimSpace(m.input.Value()))
	m.lastSearch = q
	if q == "" {
		return
	}
	i, mb := m.table.search(q, start)
	if i >= 0 && mb != nil {
		// The match is inside a collapsed sandbox: open it, land on the
		// member.
		sb := m.table.rows[i].key.sandbox
		m.expanded[sb] = true
		m.rebuild()
		i = find(m.table.rows, rowKey{sandbox: sb, id: mb.ID()})
	}
	if i >= 0 {
		m.table.cursor = i
		m.table.clamp()
		m.setStatus("", false)
	} else {
		m.setStatus(fmt.Sprintf("no row matches %q", q), true)
	}
}

// setFilter applies a filter line. A line that does not parse keeps the
// last one that did and says why under the prompt: half-typed "badge:"
// must not blank the list, and nonsense must not pass for "no match".
func (m *Model) setFilter(q string) {
	q = strings.TrimSpace(q)
	flt, err := query.Parse(q)
	if err == nil && m.view != nil {
		err = flt.CheckRuntimes(runtimesOf(m.view), presetRuntimes())
	}
	m.fltErr = err
	if err != nil {
		return
	}
	m.filterQ, m.flt = q, flt
	m.rebuild()
}

// runtimesOf names the runtimes of a view's sandboxes, sorted, once each.
func runtimesOf(v *model.View) []string {
	var out []string
	for _, sb := range v.Sandboxes {
		out = append(out, sb.Runtime)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// presetRuntimes are the runtimes sandtop's presets recognise.
var presetRuntimes = sync.OnceValue(func() []string {
	var out []string
	for _, r := range model.Presets() {
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
})

func (m *Model) sortName() string {
	if m.reverse {
		return m.sort.String() + ", reversed"
	}
	return m.sort.String()
}

// copyID puts the selected sandbox's full ID (a process's pid) on the
// clipboard with OSC 52, which works over ssh and in tmux (with
// set-clipboard on); the write happens in a Cmd. An ID is what a process
// chose, and is pasted into a shell: one a terminal would act on is not
// copied, and one with characters a shell would act on (; | $ and such)
// is copied quoted, as one word.
func (m *Model) copyID() tea.Cmd {
	r := m.table.selected()
	if r == nil || r.kind == rowHost {
		return nil
	}
	s := strconv.Itoa(r.key.id.PID)
	if r.kind == rowSandbox {
		s = r.sb.ID
	}
	if !model.IsPrintable(s) {
		m.setStatus("not copied: the ID "+s+" holds characters a terminal would act on", true)
		return nil
	}
	how := ""
	if q := teardown.ShellQuote([]string{s}); q != s {
		s, how = q, ", quoted for a shell"
	}
	m.setStatus("copied "+s+how+" (OSC 52: the terminal must allow it)", false)
	return m.clipboard(s)
}
