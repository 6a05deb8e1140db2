package teardown

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// relayTree starts a real job-control relay, `nsenter --fork` into a pid
// namespace of the test's own, around `sh`, and returns the relay and the
// root of the tree it waits for.
func relayTree(t *testing.T) (relay *exec.Cmd, child int) {
	t.Helper()
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			proctest.SkipMissing(t, "needs %s (util-linux)", tool)
		}
	}
	holder := exec.Command("unshare", "--fork", "--pid", "--kill-child", "sleep", "600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	var nsPID int
	if !proctest.Eventually(5*time.Second, func() bool {
		kids, _ := proc.Children("/proc", holder.Process.Pid)
		if len(kids) > 0 {
			nsPID = kids[0]
		}
		return nsPID > 0
	}) {
		t.Fatal("unshare started no child")
	}
	relay = exec.Command("nsenter", "-t", strconv.Itoa(nsPID), "-p", "--", "sh", "-c", "sleep 600 & sleep 600 & wait")
	if err := relay.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Process.Kill(); _ = relay.Wait() })
	if !proctest.Eventually(5*time.Second, func() bool {
		kids, _ := proc.Children("/proc", relay.Process.Pid)
		if len(kids) == 1 {
			grand, _ := proc.Children("/proc", kids[0])
			child = kids[0]
			return len(grand) == 2
		}
		return false
	}) {
		t.Fatal("the relay's child tree did not start")
	}
	return relay, child
}

// TestTeardownResumesRelayingParent: the stop pass SIGSTOPs a tree whose
// parent outside the target relays job control (nsenter --fork stops
// itself when its child stops). The teardown must not leave that parent
// stopped, and must say it resumed it.
func TestTeardownResumesRelayingParent(t *testing.T) {
	proctest.RequireRoot(t)
	rounds := envInt(t, "TORTURE_RELAY_ROUNDS", 6)
	leftStopped, resumed := 0, 0
	for range rounds {
		relay, child := relayTree(t)
		v := fleettest.View(t, model.Effective(nil, true))
		eng, plan := planPID(t, v, child, PlanOptions{})
		var events []Event
		tot := eng.Run(context.Background(), plan, func(ev Event) { events = append(events, ev) })
		if !tot.OK() {
			t.Errorf("teardown not OK: %+v", tot)
		}
		// nsenter, continued, sees its child killed and re-raises the
		// signal on itself, as a relay does: it must not be left in T.
		time.Sleep(100 * time.Millisecond)
		if _, st, err := proc.ReadIdentity("/proc", relay.Process.Pid); err == nil && st == 'T' {
			leftStopped++
			t.Errorf("the relaying parent %d (nsenter) was left stopped", relay.Process.Pid)
		}
		for _, ev := range events {
			if ev.Step == StepResume {
				if ev.PID != relay.Process.Pid || !strings.Contains(ev.Detail, "relay") {
					t.Errorf("resume event %q does not name the relay %d", ev.Text(), relay.Process.Pid)
				}
				resumed++
			}
		}
	}
	figures(t, "relays", "rounds", rounds, "resumed", resumed, "left_stopped", leftStopped)
}
