package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestDetailScrollsWithFocus: at 80×24 the detail pane of a sandbox is
// longer than its room. tab gives it the focus; then j, pgdn and G scroll
// it to the teardown plan while the list's cursor stays; tab again gives
// the list back. The title holds the whole ID.
func TestDetailScrollsWithFocus(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(80, 24), m.Init()())
	cursorTo(t, m, rowKey{sandbox: sk(idOrphan)})
	settle(m, keys("d")...)
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "sandbox "+idOrphan) {
		t.Errorf("the title lacks the whole ID:\n%s", v)
	}
	if strings.Contains(v, "teardown   ") || !strings.Contains(v, "more (tab, then ↓)") {
		t.Fatalf("at 80×24 the pane should not fit and say how to scroll:\n%s", v)
	}
	cur := m.table.cursor
	settle(m, keys("tab")...)
	if !m.detail.focused || !strings.Contains(ansi.Strip(m.helpView()), "esc close pane") {
		t.Fatalf("tab did not focus the pane: footer %q", m.helpView())
	}
	settle(m, keys("j", "pgdown", "G")...)
	v = ansi.Strip(m.View())
	if !strings.Contains(v, "teardown   graceful") || m.table.cursor != cur {
		t.Errorf("after G the plan is not in sight or the list moved (%d → %d):\n%s", cur, m.table.cursor, v)
	}
	settle(m, keys("g")...)
	if m.detail.offset != 0 {
		t.Errorf("g left the pane at %d", m.detail.offset)
	}
	settle(m, keys("tab", "j")...)
	if m.detail.focused || m.table.cursor != cur+1 {
		t.Errorf("tab did not give the list back: focused %v, cursor %d", m.detail.focused, m.table.cursor)
	}
	if m.detail.offset != 0 {
		t.Errorf("another row's pane starts scrolled (%d)", m.detail.offset)
	}
}

// TestArgvWrapsAtSpaces: a command line wraps at its spaces only, never
// inside a flag or a hyphenated name.
func TestArgvWrapsAtSpaces(t *testing.T) {
	argv := "bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-uts --die-with-parent --new-session --ro-bind /usr /usr"
	words := strings.Fields(argv)
	for _, w := range []int{20, 30, 57} {
		for _, l := range wrapArgv(argv, w) {
			for _, f := range strings.Fields(l) {
				if !strings.Contains(" "+argv+" ", " "+f+" ") {
					t.Errorf("at %d a line holds %q, a piece of a word (of %v)", w, f, words)
				}
			}
			if ansi.StringWidth(l) > w {
				t.Errorf("at %d line %q is wider", w, l)
			}
		}
	}
}

// TestConfirmListsEveryTarget: a kill of four sandboxes at 80×24 lists
// each target, its process count and its badges; the list scrolls with
// the arrows and PgDn, which show in the footer only then.
func TestConfirmListsEveryTarget(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(80, 24), m.Init()())
	tag(idVM0, idOrphan, idShim, idPaused)(t, m)
	settle(m, keys("K")...)
	if !strings.Contains(ansi.Strip(m.helpView()), "scroll") {
		t.Errorf("footer does not offer to scroll: %q", m.helpView())
	}
	seen := ""
	for range 12 {
		seen += ansi.Strip(m.View())
		settle(m, keys("pgdown")...)
	}
	settle(m, keys("up")...)
	seen += ansi.Strip(m.View())
	for _, want := range []string{
		idVM0 + "  vm0  3 processes (1 zombie)", "[zombie]",
		idOrphan + "  vm0  2 processes", "[orphan]",
		idShim + "  containerd  5 processes",
		idPaused + "  containerd  2 processes", "[paused]",
		"state      paused (frozen)",
	} {
		if !strings.Contains(seen, want) {
			t.Errorf("the confirmation never shows %q:\n%s", want, seen)
		}
	}
	if strings.Contains(seen, "targets more") {
		t.Error("a target is still summed up instead of listed")
	}
}
