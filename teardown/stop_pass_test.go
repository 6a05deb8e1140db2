package teardown

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// startTree starts `sh -c script` as a child of the test and waits until
// it has n descendants; the test reaps it.
func startTree(t *testing.T, script string, n int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !proctest.Eventually(5*time.Second, func() bool {
		kids, err := proc.Children("/proc", cmd.Process.Pid)
		return err == nil && len(kids) >= n
	}) {
		t.Fatalf("%q did not start %d children", script, n)
	}
	return cmd
}

// TestStopPassJudgesSettledState: processes in plain sleep (S) stop on
// SIGSTOP a moment after it is sent. The stop pass must report them
// stopped, judged once their state settles, and never call them
// "uninterruptible" (only D is).
func TestStopPassJudgesSettledState(t *testing.T) {
	proctest.RequireRoot(t)
	rounds := envInt(t, "TORTURE_STOP_ROUNDS", defaultStopRounds)
	misjudged := 0
	for i := range rounds {
		cmd := startTree(t, "sleep 100 & sleep 100 & sleep 100 & sleep 100 & wait", 4)
		v := fleettest.View(t, model.Effective(nil, true))
		eng, plan := planPID(t, v, cmd.Process.Pid, PlanOptions{})
		var stop Event
		tot := eng.Run(context.Background(), plan, func(ev Event) {
			if ev.Step == StepStop {
				stop = ev
			}
		})
		want := fmt.Sprintf("%d of %d processes held by SIGSTOP", len(plan.Members), len(plan.Members))
		if !tot.OK() || strings.Contains(stop.Detail, "uninterruptible") || !strings.Contains(stop.Detail, want) {
			misjudged++
			t.Errorf("round %d: stop pass on sleeping processes said %q (want %q); totals %+v", i, stop.Detail, want, tot)
		}
		_ = cmd.Wait()
	}
	figures(t, "stop-pass", "rounds", rounds, "misjudged", misjudged)
}
