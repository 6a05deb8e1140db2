package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/key"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/proc/proctest"
	"github.com/sandtop/sandtop/ui"
)

// The read-only torture check. ui/readonly_test.go proves, on the
// model, that read-only mode has a nil killer and that no bound key reaches
// one; this test proves it on the real program: `sandtop watch` on a real
// terminal (tmux), beside a real fleet, fed every bound key and a random
// key stream, under strace. No signal may leave the process, and no pidfd
// may be opened (Pin, the engine's first step, is the only pidfd_open in
// sandtop): the engine never ran.

// envWatchChild names the file the child writes its pid to: the tgid
// that strace's tgkill lines name when the Go runtime signals its own
// threads.
const envWatchChild = "SANDTOP_TORTURE_WATCH_CHILD"

// TestReadOnlyWatchChild is the program under test: `sandtop watch`.
func TestReadOnlyWatchChild(t *testing.T) {
	if os.Getenv(envWatchChild) == "" {
		t.Skip("runs only under TestTortureReadOnlyWatch")
	}
	if err := os.WriteFile(os.Getenv(envWatchChild), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"watch", "--interval", "100ms"}, os.Stdin, os.Stdout, os.Stderr); code != 0 {
		t.Fatalf("sandtop watch: exit %d", code)
	}
}

// tmuxKey turns a bubbletea key name into tmux send-keys arguments.
func tmuxKey(k string) []string {
	named := map[string]string{
		"up": "Up", "down": "Down", "left": "Left", "right": "Right", "pgup": "PPage", "pgdown": "NPage",
		"home": "Home", "end": "End", "enter": "Enter", "esc": "Escape", "tab": "Tab", "shift+tab": "BTab",
		" ": "Space", "backspace": "BSpace", "delete": "DC",
	}
	switch {
	case named[k] != "":
		return []string{named[k]}
	case strings.HasPrefix(k, "ctrl+"):
		return []string{"C-" + strings.TrimPrefix(k, "ctrl+")}
	case len(k) > 1 && k[0] == 'f':
		if _, err := strconv.Atoi(k[1:]); err == nil {
			return []string{strings.ToUpper(k)}
		}
	}
	return []string{"-l", k}
}

// boundKeys lists every key of every binding but Quit's and ForceQuit's, by reflection, so
// a binding added later is covered too.
func boundKeys(t *testing.T) (keys, quit []string) {
	t.Helper()
	km := reflect.ValueOf(ui.DefaultKeyMap())
	for i := range km.NumField() {
		b, ok := km.Field(i).Interface().(key.Binding)
		if !ok {
			continue
		}
		if name := km.Type().Field(i).Name; name == "Quit" || name == "ForceQuit" {
			quit = append(quit, b.Keys()...)
		} else {
			keys = append(keys, b.Keys()...)
		}
	}
	if len(keys) == 0 {
		t.Fatal("no key bindings found")
	}
	return keys, quit
}

// signalCall matches the strace lines of calls that send a signal.
var signalCall = regexp.MustCompile(`^(\d+)\s+(kill|tkill|tgkill|pidfd_send_signal|rt_sigqueueinfo|rt_tgsigqueueinfo|pidfd_open)\(([^)]*)\)`)

func TestTortureReadOnlyWatch(t *testing.T) {
	for _, tool := range []string{"strace", "tmux"} {
		if _, err := exec.LookPath(tool); err != nil {
			proctest.SkipMissing(t, "%s not installed (make test-deps and make torture install it)", tool)
		}
	}
	fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0},
		{Name: "orphan", Runtime: fleet.Containerd, Orphan: true},
		{Name: "paused", Runtime: fleet.Cube, Pause: fleet.PauseFreeze},
	}})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trace := filepath.Join(dir, "strace.out")
	pidFile := filepath.Join(dir, "pid")
	// A tmux server of our own, on a socket in the test's temporary
	// directory (-S), so that nothing else's sessions are touched and no
	// socket outlives the test.
	sock := filepath.Join(dir, "tmux")
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })
	prog := fmt.Sprintf("env %s=%s TERM=xterm-256color strace -f -qq -o %s -e trace=kill,tkill,tgkill,pidfd_send_signal,rt_sigqueueinfo,rt_tgsigqueueinfo,pidfd_open,exit_group %s -test.run='^TestReadOnlyWatchChild$' -test.count=1 2>%s",
		envWatchChild, pidFile, trace, self, filepath.Join(dir, "stderr"))
	if out, err := tmux("new-session", "-d", "-s", "watch", "-x", "120", "-y", "40", prog); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	screen := func() string { out, _ := tmux("capture-pane", "-p", "-t", "watch"); return out }
	waitScreen := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(screen(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("screen never showed %q:\n%s", want, screen())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitScreen("READ-ONLY")

	keys, quit := boundKeys(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("key stream seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	// Every bound key twice, in order, then a random stream of bound keys
	// and stray characters (y, n and Enter for any confirmation).
	stream := append(append([]string{}, keys...), keys...)
	extra := []string{"y", "Y", "n", "x", "1", "enter", "esc", "K", "f9", " "}
	n := 300
	if testing.Short() {
		n = 60
	}
	for range n {
		if rng.IntN(3) == 0 {
			stream = append(stream, extra[rng.IntN(len(extra))])
		} else {
			stream = append(stream, keys[rng.IntN(len(keys))])
		}
	}
	for i, k := range stream {
		if out, err := tmux(append([]string{"send-keys", "-t", "watch"}, tmuxKey(k)...)...); err != nil {
			t.Fatalf("send %q (key %d): %v: %s", k, i, err, out)
		}
		if i%20 == 0 {
			time.Sleep(20 * time.Millisecond) // let refreshes interleave
		}
	}
	time.Sleep(300 * time.Millisecond)
	for _, k := range []string{"esc", "esc", quit[0]} {
		_, _ = tmux(append([]string{"send-keys", "-t", "watch"}, tmuxKey(k)...)...)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := tmux("has-session", "-t", "watch"); err != nil {
			break // the program quit and took its session along
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandtop watch did not quit on %q:\n%s", quit[0], screen())
		}
		time.Sleep(50 * time.Millisecond)
	}

	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatalf("strace output: %v", err)
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the watched program never wrote its pid: %v", err)
	}
	tgid := string(pid)
	runtimeSignals, foreign := signalCalls(string(data), tgid)
	for _, l := range foreign {
		t.Errorf("read-only mode made a signal call: %s", l)
	}
	lines := strings.Split(string(data), "\n")
	t.Logf("TORTURE readonly: keys_sent=%d own_thread_signals=%d foreign_signal_calls=%d pidfd_opens=%d",
		len(stream), runtimeSignals, len(foreign), strings.Count(string(data), "pidfd_open("))
	if len(lines) < 2 {
		t.Error("strace recorded nothing: the check proved nothing")
	}
}

// signalCalls sorts the signal calls of an strace of the program whose
// thread group is tgid: how many went to its own threads (the Go runtime
// preempts them with SIGURG), and the lines of those that reached outside.
func signalCalls(trace, tgid string) (own int, foreign []string) {
	// Threads the trace saw, for tkill, which names no thread group. A
	// thread that never made a traced call is still covered by tgkill,
	// whose first argument the kernel checks: tgkill(tgid, tid) only ever
	// reaches a thread of tgid.
	threads := map[string]bool{tgid: true}
	lines := strings.Split(trace, "\n")
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 {
			threads[f[0]] = true
		}
	}
	for _, l := range lines {
		switch classifySignalCall(l, tgid, threads) {
		case ownSignal:
			own++
		case foreignSignal:
			foreign = append(foreign, l)
		}
	}
	return own, foreign
}

type signalKind int

const (
	notSignal signalKind = iota
	ownSignal
	foreignSignal
)

// classifySignalCall sorts one strace line: not a signal call, a signal the
// program sent to one of its own threads (the Go runtime preempts them with
// SIGURG), or a signal or pidfd that reached outside it.
func classifySignalCall(line, tgid string, own map[string]bool) signalKind {
	m := signalCall.FindStringSubmatch(line)
	if m == nil {
		return notSignal
	}
	args := strings.Split(m[3], ", ")
	switch m[2] {
	case "tgkill", "kill":
		if args[0] == tgid {
			return ownSignal
		}
	case "tkill":
		if own[args[0]] {
			return ownSignal
		}
	}
	return foreignSignal
}

func TestClassifySignalCall(t *testing.T) {
	own := map[string]bool{"100": true, "101": true}
	for line, want := range map[string]signalKind{
		"101 tgkill(100, 102, SIGURG)      = 0":          ownSignal, // 102 never made a traced call
		"101 tgkill(200, 201, SIGURG)      = 0":          foreignSignal,
		"101 tkill(101, SIGURG)            = 0":          ownSignal,
		"101 tkill(300, SIGURG)            = 0":          foreignSignal,
		"101 kill(100, SIGURG)             = 0":          ownSignal,
		"101 kill(4242, SIGTERM)           = 0":          foreignSignal,
		"101 kill(-4242, SIGKILL)          = 0":          foreignSignal,
		"101 pidfd_open(4242, 0)           = 7":          foreignSignal,
		"101 pidfd_send_signal(7, SIGKILL, NULL, 0) = 0": foreignSignal,
		"101 exit_group(0)                 = ?":          notSignal,
	} {
		if got := classifySignalCall(line, "100", own); got != want {
			t.Errorf("classifySignalCall(%q) = %d, want %d", line, got, want)
		}
	}
}
