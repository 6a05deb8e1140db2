package teardown

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// vforkC is a parent that vforks a child that never execs: the parent
// waits in the kernel in D (wait_for_vfork_done), where SIGSTOP cannot
// stop it; SIGKILL can end that wait.
const vforkC = `#include <unistd.h>
int main(void) { if (vfork() == 0) { for (;;) pause(); } return 0; }
`

// TestStopPassNamesDState: a process held in D by vfork is named as in
// uninterruptible sleep by the stop pass, with its pid, and the teardown
// still ends clean (the vfork wait is killable).
func TestStopPassNamesDState(t *testing.T) {
	proctest.RequireRoot(t)
	cc, err := exec.LookPath("cc")
	if err != nil {
		proctest.SkipMissing(t, "needs a C compiler for a vfork holder")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "vfork.c"), filepath.Join(dir, "vfork")
	if err := os.WriteFile(src, []byte(vforkC), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !proctest.Eventually(5e9, func() bool {
		_, st, err := proc.ReadIdentity("/proc", cmd.Process.Pid)
		return err == nil && st == 'D'
	}) {
		t.Skip("the vfork parent is not shown in D on this kernel")
	}
	v := fleettest.View(t, model.Effective(nil, true))
	eng, plan := planPID(t, v, cmd.Process.Pid, PlanOptions{})
	var stop Event
	tot := eng.Run(context.Background(), plan, func(ev Event) {
		t.Logf("[%s] %s", ev.Status, ev.Text())
		if ev.Step == StepStop {
			stop = ev
		}
	})
	want := fmt.Sprintf("in uninterruptible sleep (D), cannot stop until its wait in the kernel ends: %d vfork", cmd.Process.Pid)
	if !strings.Contains(stop.Detail, want) {
		t.Errorf("stop pass said %q, want it to hold %q", stop.Detail, want)
	}
	if !tot.OK() {
		t.Errorf("the vfork parent's wait is killable, yet: %+v", tot)
	}
}

// TestSurvivorSaysWhyStuck: a survivor in D is explained with the kernel
// function it waits in, in words and in the JSON fields. No process on
// this machine can be held in D against SIGKILL at will, so the /proc it
// is read from is a fixture.
func TestSurvivorSaysWhyStuck(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "4242"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "4242", "wchan"), []byte("fuse_request_wait"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &run{e: &Engine{procRoot: root}, p: &Plan{}, reasons: map[proc.Identity]string{}, byPID: map[int]proc.Identity{4242: {PID: 4242, Start: 7}},
		pins: map[proc.Identity]*Pinned{{PID: 4242, Start: 7}: {}}, dead: map[proc.Identity]bool{}}
	s := r.survivor(&proc.Process{PID: 4242, PPID: 100, Start: 7, Comm: "reader", State: 'D'})
	b, _ := json.Marshal(s)
	if s.Cause != "uninterruptible" || s.Wchan != "fuse_request_wait" || !strings.Contains(s.Reason, "uninterruptible sleep (D) in the kernel's fuse_request_wait") {
		t.Errorf("survivor in D: %s", b)
	}
	if !strings.Contains(string(b), `"wchan":"fuse_request_wait"`) || !strings.Contains(string(b), `"state":"D"`) {
		t.Errorf("JSON %s lacks the state and wchan", b)
	}
}
