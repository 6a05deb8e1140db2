package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/sandtop/sandtop/model"
)

// startProgram runs the model as a real bubbletea program on a 120×30
// terminal and waits for the first scan to be on screen.
func startProgram(t *testing.T, m *Model) *teatest.TestModel {
	t.Helper()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 30))
	t.Cleanup(func() { _ = tm.Quit() })
	waitFor(t, tm, "deadbeef0000")
	return tm
}

func finalModel(t *testing.T, tm *teatest.TestModel) *Model {
	t.Helper()
	tm.Send(keyMsg("q"))
	return tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
}

func send(tm *teatest.TestModel, names ...string) {
	for _, n := range names {
		tm.Send(keyMsg(n))
	}
}

// TestProgramNavigation walks the fleet with the keys an operator uses.
func TestProgramNavigation(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	tm := startProgram(t, m)

	send(tm, "j", "j", "right") // onto the pod, open it
	waitFor(t, tm, "├─ nginx: worker process")
	send(tm, "down", "left") // onto the shim process, back to its sandbox
	send(tm, "h")            // and fold it
	send(tm, "G", "k", "enter")
	waitFor(t, tm, "rule       containerd (rules.toml:9)") // the pod's details, k from the last row
	send(tm, "d", "g", "f5", "f6", "down", "enter")        // F6's menu: the order after id
	waitFor(t, tm, "sort cpu · flat")
	send(tm, "?")
	waitFor(t, tm, "expand/collapse all")
	send(tm, "?", "/")
	for _, r := range "nginx" {
		tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	send(tm, "enter")
	waitFor(t, tm, `filter "nginx": 1 of 4 sandboxes`)

	fm := finalModel(t, tm)
	if got := selectedKey(fm); got != (rowKey{sandbox: sk(idShim)}) {
		t.Errorf("cursor on %+v, want the pod", got)
	}
	if fm.expanded[sk(idShim)] || fm.showDetail || fm.tree || fm.sort != sortCPU || fm.filterQ != "nginx" {
		t.Errorf("end state: expanded %v detail %v tree %v sort %v filter %q",
			fm.expanded, fm.showDetail, fm.tree, fm.sort, fm.filterQ)
	}
}

// TestProgramResize shrinks the terminal below the minimum and back.
func TestProgramResize(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	tm := startProgram(t, m)
	tm.Send(tea.WindowSizeMsg{Width: 60, Height: 20})
	waitFor(t, tm, "terminal too small: 60×20")
	tm.Send(tea.WindowSizeMsg{Width: 100, Height: 11})
	waitFor(t, tm, "terminal too small: 100×11")
	tm.Send(tea.WindowSizeMsg{Width: 90, Height: 16})
	waitFor(t, tm, "ID/PID")
	send(tm, "e", "G") // the last row must stay on screen at the new size
	fm := finalModel(t, tm)
	if fm.table.cursor < fm.table.offset || fm.table.cursor >= fm.table.offset+fm.table.height {
		t.Errorf("cursor %d outside the window [%d, %d)", fm.table.cursor, fm.table.offset, fm.table.offset+fm.table.height)
	}
	if got := len(strings.Split(fm.View(), "\n")); got > 16 {
		t.Errorf("view has %d lines on a 16-line terminal", got)
	}
}

// TestProgramKillStreams tears a sandbox down through the program: the
// log streams the steps while the teardown runs, a second K on the same
// sandbox is refused, and after it the sandbox is gone from the list and
// the audit log holds the record.
func TestProgramKillStreams(t *testing.T) {
	views := fleetViews(1)
	gone := rebuilt(views[0], time.Second, []int{210, 211})
	k := &fakeKiller{release: make(chan struct{})}
	m := newTestModel(t, &fakeSource{views: []*model.View{views[0], gone}}, k)
	tm := startProgram(t, m)

	send(tm, "j", "K")
	waitFor(t, tm, "Tear down sandbox "+idOrphan)
	send(tm, "y")
	waitFor(t, tm, "teardown running", "all pinned")

	send(tm, "tab", "K") // back to the list, the same sandbox again
	waitFor(t, tm, "already being torn down")
	send(tm, "q")
	waitFor(t, tm, "q again stops it before SIGKILL")

	close(k.release)
	waitFor(t, tm, "teardown finished")
	fm := finalModel(t, tm)

	if find(fm.table.rows, rowKey{sandbox: sk(idOrphan)}) >= 0 {
		t.Errorf("the torn-down sandbox is still listed")
	}
	if got := k.runs(); len(got) != 1 || got[0] != idOrphan {
		t.Errorf("killer ran %v, want one teardown of %s", got, idOrphan)
	}
	recs := auditRecords(t, k.audit)
	if len(recs) != 1 || recs[0].Target != idOrphan || recs[0].Via != "tui" {
		t.Errorf("audit records %+v", recs)
	}
	if len(fm.busy) != 0 || len(fm.batches) != 0 {
		t.Errorf("busy %v, batches %v after the teardown ended", fm.busy, fm.batches)
	}
}

// TestKeyBurst feeds runes that arrive in one read, as bubbletea delivers
// a fast key repeat: each is a key of its own, but a paste is ignored and
// a burst never confirms a kill.
func TestKeyBurst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		msg     tea.KeyMsg
		cursor  int
		confirm bool
	}{
		{"three j", tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jjj")}, 3, false},
		{"pasted", tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jjj"), Paste: true}, 0, false},
		{"K then y", tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("Ky")}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &fakeKiller{}
			m := newTestModel(t, &fakeSource{views: fleetViews(1)}, k)
			settle(m, size(120, 30), m.Init()())
			settle(m, tc.msg)
			if m.table.cursor != tc.cursor {
				t.Errorf("cursor %d, want %d", m.table.cursor, tc.cursor)
			}
			if (m.mode == modeConfirm) != tc.confirm {
				t.Errorf("confirmation open = %v, want %v", m.mode == modeConfirm, tc.confirm)
			}
			if r := k.runs(); len(r) != 0 {
				t.Errorf("a burst ran a teardown: %v", r)
			}
		})
	}
}

// TestEscapeReadWithNextKey sends what bubbletea makes of an esc that
// arrives together with the next key: alt+esc for esc esc, alt+q for
// esc q. Both must act as the two keys.
func TestEscapeReadWithNextKey(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(120, 30), m.Init()())
	settle(m, keys("/")...)
	settle(m, typeText("nginx")...)
	settle(m, keys("enter", "f3")...)
	settle(m, typeText("pod")...)
	settle(m, tea.KeyMsg{Type: tea.KeyEsc, Alt: true}) // esc esc
	if m.mode != modeNormal || m.filterQ != "" {
		t.Fatalf("alt+esc: mode %v, filter %q; want the search closed and the filter cleared", m.mode, m.filterQ)
	}
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q"), Alt: true}) // esc q
	if !quits(cmd) {
		t.Errorf("alt+q did not quit")
	}
}

// quits reports whether cmd, or a command of its batch, quits.
func quits(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	switch msg := cmd().(type) {
	case tea.QuitMsg:
		return true
	case tea.BatchMsg:
		for _, c := range msg {
			if quits(c) {
				return true
			}
		}
	}
	return false
}

// TestStandingNote: Options.Note (the demo's word on what runs differently
// without root) is on the status line from the start, and stays there
// through the keys that clear a passing status.
func TestStandingNote(t *testing.T) {
	const note = "demo: paused by SIGSTOP, not frozen"
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{}, func(o *Options) { o.Note = note })
	settle(m, size(120, 30), m.Init()())
	if !strings.Contains(m.View(), note) {
		t.Errorf("the note is not on the screen:\n%s", m.View())
	}
	settle(m, keys("j", "k")...)
	if !strings.Contains(m.View(), note) {
		t.Errorf("a key took the note away:\n%s", m.View())
	}
}
