package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc/proctest"
)

// TestDemoLeavesNothingBehind runs `sandtop demo` in a real terminal (tmux)
// and ends it three ways — q, Ctrl-C, and SIGKILL of sandtop itself — and
// checks each time that no process, cgroup or directory of the fleet is
// left.
func TestDemoLeavesNothingBehind(t *testing.T) {
	needTmux(t)
	proctest.RequireRoot(t) // the demo fleet's cgroups
	bin := sandtopBinary(t)
	for _, end := range []string{"q", "ctrl-c", "sigkill"} {
		t.Run(end, func(t *testing.T) {
			dir := t.TempDir()
			manifest := filepath.Join(dir, "manifest.json")
			session := "sandtop-demo-test-" + strconv.Itoa(os.Getpid()) + "-" + end
			// The pane runs sandtop through a shell that records its pid,
			// so the test can name the one process it may SIGKILL.
			pidFile := filepath.Join(dir, "pid")
			script := "echo $$ > " + pidFile + "; exec " + bin + " demo --manifest " + manifest
			// A private tmux server: whatever the demo strands comes back
			// to this test to be reaped, not to a PID 1 that does not reap.
			tm := newTmux(t, dir)
			sock := tm.sock
			tmux := func(args ...string) { t.Helper(); tm.run(args...) }
			tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "35", script)

			m := waitManifest(t, manifest)
			// "row 1 of" is the live screen's with its rows, never the
			// "demo fleet: N sandboxes started" printed before it.
			screen := waitScreen(t, sock, session, "row 1 of")
			if !strings.Contains(screen, "orphan") {
				t.Errorf("demo screen shows no orphan badge:\n%s", screen)
			}
			pid := readPID(t, pidFile)
			switch end {
			case "q":
				tmux("send-keys", "-t", session, "q")
			case "ctrl-c":
				tmux("send-keys", "-t", session, "C-c")
			case "sigkill":
				// The one process this test started: sandtop, by the pid
				// its own shell recorded before exec.
				if err := killOwn(pid, bin); err != nil {
					t.Fatal(err)
				}
			}
			assertFleetGone(t, m)
		})
	}
}

func waitManifest(t *testing.T, path string) fleet.Manifest {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			var m fleet.Manifest
			if err := json.Unmarshal(b, &m); err == nil {
				return m
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the demo wrote no manifest")
	return fleet.Manifest{}
}

func waitScreen(t *testing.T, sock, session, want string) string {
	t.Helper()
	var screen string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out, _ := exec.Command("tmux", sock, "capture-pane", "-p", "-t", session).Output()
		if screen = string(out); strings.Contains(screen, want) {
			return screen
		}
	}
	t.Fatalf("screen never showed %q:\n%s", want, screen)
	return ""
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("bad pid file %q", b)
	}
	return pid
}

// assertFleetGone waits for the fleet to be torn down and checks that none
// of its processes, cgroups or files is left.
func assertFleetGone(t *testing.T, m fleet.Manifest) {
	t.Helper()
	procs := append(m.Processes(), m.Owner)
	deadline := time.Now().Add(15 * time.Second)
	for {
		var left []string
		for _, p := range procs {
			if alive(p.Identity) {
				left = append(left, strconv.Itoa(p.PID)+" "+p.Comm)
			}
		}
		for _, d := range append(append([]string{}, m.CgroupDirs...), m.Base) {
			if _, err := os.Stat(d); err == nil {
				left = append(left, d)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killOwn SIGKILLs pid through a pidfd, after checking that the process the
// pidfd holds is the sandtop binary this test built and started.
func killOwn(pid int, bin string) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	argv, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return err
	}
	if got := strings.SplitN(string(argv), "\x00", 2)[0]; got != bin {
		return fmt.Errorf("pid %d runs %q, not the sandtop under test", pid, got)
	}
	return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
}

// TestDemoSummaryCountsWhatTheScreenShows: the count the demo prints is the
// count of sandboxes on the screen; a sandbox the model cannot recognise
// (without root, one found only by its cgroup) is named, and a sandbox
// paused by SIGSTOP because it could not be frozen gets the screen's note.
func TestDemoSummaryCountsWhatTheScreenShows(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "web", Runtime: fleet.Containerd},
	}})
	m := f.Manifest()
	v := fleettest.View(t, model.Effective(nil, true))
	started, note := demoSummary(m, v, time.Second)
	if started != "1 sandbox started in 1s" || note != "" {
		t.Errorf("all recognised: %q, note %q", started, note)
	}
	// A sandbox the model does not see: its "root" is the fleet's owner,
	// which is in no sandbox; and one stopped instead of frozen.
	m.Sandboxes = append(m.Sandboxes, fleet.Sandbox{Name: "libvirt-guest", Processes: []fleet.Process{m.Owner}})
	m.Sandboxes[0].Paused, m.Sandboxes[0].Spec.Pause = fleet.PauseStop, fleet.PauseFreeze
	started, note = demoSummary(m, v, time.Second)
	if want := "2 sandboxes started in 1s, 1 shown (libvirt-guest not recognisable without its cgroup)"; started != want {
		t.Errorf("started %q, want %q", started, want)
	}
	if !strings.Contains(note, "paused by SIGSTOP, not frozen (no cgroups without root): web") || !strings.Contains(note, "not shown without root: libvirt-guest") {
		t.Errorf("note %q", note)
	}
}
