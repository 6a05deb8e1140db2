package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/proc/proctest"
)

// TestScreenKeysAt80x24 drives the live screen in a real 80×24 terminal
// (tmux) on the demo fleet, key by key, as a new on-call engineer would:
// the footer keeps ? and q; ? is a page that scrolls; the detail pane
// takes the focus with tab and scrolls with G; F6 is a menu; s starts a
// new order unreversed; an unknown runtime is an error naming the
// runtimes; tab does nothing and is not offered with no pane open;
// several tagged targets are all listed.
func TestScreenKeysAt80x24(t *testing.T) {
	needTmux(t)
	proctest.RequireRoot(t) // the demo fleet's cgroups
	bin := sandtopBinary(t)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "manifest.json")
	session := "sandtop-keys80-" + strconv.Itoa(os.Getpid())
	tm := newTmux(t, dir)
	sock := tm.sock
	tm.run("new-session", "-d", "-s", session, "-x", "80", "-y", "24",
		"exec "+bin+" demo --seed 7 --audit-log "+filepath.Join(dir, "audit.jsonl")+" --manifest "+manifest)
	m := waitManifest(t, manifest)
	t.Cleanup(func() {
		tm.run("send-keys", "-t", session, "q")
		assertFleetGone(t, m)
	})
	keys := func(k ...string) { t.Helper(); tm.run(append([]string{"send-keys", "-t", session}, k...)...) }
	screen := waitScreen(t, sock, session, "row 1 of")
	lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	if foot := lines[len(lines)-1]; !strings.Contains(foot, "? more keys • q F10 quit") {
		t.Errorf("footer at 80 columns: %q", foot)
	}
	if strings.Contains(screen, "BADGES/CO ") || !strings.Contains(screen, "BADGES/COMMAND") {
		t.Errorf("the last column's title is cut:\n%s", screen)
	}

	keys("?")
	waitScreen(t, sock, session, "expand/collapse all")
	keys("PgDn", "PgDn")
	waitScreen(t, sock, session, "does not hold")
	keys("?")
	waitScreen(t, sock, session, "? more keys")

	keys("tab")
	if s := waitScreen(t, sock, session, "row 1 of"); strings.Contains(s, "focus pane") {
		t.Errorf("tab offered with no pane open:\n%s", s)
	}
	// The host may hold sandboxes besides the demo's (another run's
	// leftovers sort first): search for a live VM of the demo's own, and
	// open the pane on it.
	var vm string
	for _, sb := range m.Sandboxes {
		if sb.Runtime == fleet.VM0 && !sb.Orphan {
			vm = sb.ID
			break
		}
	}
	if vm == "" {
		t.Fatalf("the demo fleet has no live vm0 sandbox: %+v", m.Sandboxes)
	}
	keys("F3")
	keys("-l", vm)
	keys("Enter")
	keys("d")
	waitScreen(t, sock, session, "(tab, then ↓)")
	keys("tab")
	waitScreen(t, sock, session, "esc close pane")
	keys("G")
	waitScreen(t, sock, session, "teardown   ")
	keys("Escape")
	waitScreen(t, sock, session, "? more keys")

	keys("F6")
	waitScreen(t, sock, session, "Sort by")
	keys("Down", "Enter")
	waitScreen(t, sock, session, "sort cpu")
	keys("I")
	waitScreen(t, sock, session, "sorted by cpu, reversed")
	keys("s")
	waitScreen(t, sock, session, "sorted by memory")

	keys("/")
	keys("-l", "runtime:dockr")
	if s := waitScreen(t, sock, session, "unknown runtime"); !strings.Contains(s, "firecracker") {
		t.Errorf("the error does not name the presets' runtimes:\n%s", s)
	}
	keys("Escape")
	waitScreen(t, sock, session, "? more keys")

	keys("g", "Space", "Space", "K")
	waitScreen(t, sock, session, "Tear down 2 targets")
	keys("PgDn")
	waitScreen(t, sock, session, "↑ ")
	keys("Escape")
	waitScreen(t, sock, session, "row ")
}
