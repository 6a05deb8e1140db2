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
