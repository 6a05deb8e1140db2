package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

// TestTUIRefreshesWithFewWakeups runs the live screen refreshing every
// second on this host and counts the times its threads went to sleep
// (voluntary context switches: those a busy machine's other work forces,
// the involuntary ones, are not the screen's doing). A refresh is one
// chain of work; each switch is a thread woken for it. On two processors
// the runtime woke a spinning thread for every hand-off between
// goroutines, and sysmon polled through every refresh: about twenty a
// second on an idle host, where htop takes four.
func TestTUIRefreshesWithFewWakeups(t *testing.T) {
	needTmux(t)
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: the screen runs on one processor anyway")
	}
	bin := sandtopBinary(t)
	tm := newTmux(t, t.TempDir())
	tm.run("new-session", "-d", "-s", "busy", "-x", "120", "-y", "40", "env -u GOMAXPROCS "+bin+" watch --interval 1s")
	pid, err := strconv.Atoi(strings.TrimSpace(tm.run("list-panes", "-t", "busy", "-F", "#{pane_pid}")))
	if err != nil {
		t.Fatal(err)
	}
	waitScreen(t, tm.sock, "busy", "sandbox")
	time.Sleep(2 * time.Second) // the first refreshes' user-name lookups
	const window = 3 * time.Second
	quietest := -1
	for range 3 {
		before := voluntarySwitches(t, pid)
		time.Sleep(window)
		if n := voluntarySwitches(t, pid) - before; quietest < 0 || n < quietest {
			quietest = n
		}
	}
	perSecond := float64(quietest) / window.Seconds()
	t.Logf("%.1f voluntary context switches a second in the quietest window", perSecond)
	// The target, all switches on an idle host, is 5 (make bench-compare);
	// other tests run beside this one, and a refresh that waits for a CPU
	// gives sysmon longer to poll. Two processors measured 9 to 20 here.
	if perSecond > 6 {
		t.Errorf("the screen refreshing once a second went to sleep %.1f times a second, want at most 6", perSecond)
	}
}

// contextSwitches sums the voluntary and involuntary context switches of
// every thread of pid (proc(5), /proc/PID/task/TID/status).
func contextSwitches(t *testing.T, pid int) int {
	t.Helper()
	return countSwitches(t, pid, "ctxt_switches")
}

// voluntarySwitches sums the voluntary context switches of every thread
// of pid.
func voluntarySwitches(t *testing.T, pid int) int {
	t.Helper()
	return countSwitches(t, pid, "\nvoluntary_ctxt_switches")
}

// countSwitches sums, over every thread of pid, the status fields whose
// name, with the newline before it, ends in suffix.
func countSwitches(t *testing.T, pid int, suffix string) int {
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
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix("\n"+k, suffix) {
				c, _ := strconv.Atoi(strings.TrimSpace(v))
				n += c
			}
		}
	}
	return n
}
