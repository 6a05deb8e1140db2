package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTUIIdleDoesNotWake runs the live screen in a real terminal (tmux)
// and counts its context switches between two refreshes: an idle screen
// whose view does not change must not wake at all (bubbletea's standard
// renderer woke 60 times a second for its frame ticker). It then checks
// that a keystroke is still drawn promptly.
func TestTUIIdleDoesNotWake(t *testing.T) {
	needTmux(t)
	bin := sandtopBinary(t)
	tm := newTmux(t, t.TempDir())
	sock, tmux := tm.sock, tm.run
	// A 30 s interval: the whole measurement falls between the first scan
	// and the next refresh.
	tmux("new-session", "-d", "-s", "idle", "-x", "120", "-y", "40", "exec "+bin+" watch --interval 30s")
	pid, err := strconv.Atoi(strings.TrimSpace(tmux("list-panes", "-t", "idle", "-F", "#{pane_pid}")))
	if err != nil {
		t.Fatal(err)
	}
	// The first scan has returned once the header counts sandboxes (it
	// says "scanning…" until then).
	waitScreen(t, sock, "idle", "sandbox")
	// Three windows of a second, after the first scan's commands (user
	// names) settled; on a loaded machine a window can still catch the end
	// of that work, so the quietest one is judged.
	time.Sleep(time.Second)
	quietest := -1
	for range 3 {
		before := contextSwitches(t, pid)
		time.Sleep(time.Second)
		if woke := contextSwitches(t, pid) - before; quietest < 0 || woke < quietest {
			quietest = woke
		}
	}
	t.Logf("%d context switches in the quietest idle second", quietest)
	// The standard renderer's ticker alone switched 60 times a second.
	if quietest > 5 {
		t.Errorf("the idle screen switched context %d times in a second: it wakes between refreshes", quietest)
	}

	tmux("send-keys", "-t", "idle", "?")
	start := time.Now()
	waitScreen(t, sock, "idle", "expand/collapse all")
	if d := time.Since(start); d > time.Second {
		t.Errorf("help drawn %s after the keystroke, want it at once", d)
	}
}

// contextSwitches sums the voluntary and involuntary context switches of
// every thread of pid (proc(5), /proc/PID/task/TID/status).
func contextSwitches(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	n := 0
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that exited
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				c, _ := strconv.Atoi(strings.TrimSpace(v))
				n += c
			}
		}
	}
	return n
}
