package teardown

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// TestPlanNamesSIGTERMIgnorers: the plan reads SigIgn and names each
// process that ignores SIGTERM with what becomes of it, and the grace log
// counts down naming the holdouts.
func TestPlanNamesSIGTERMIgnorers(t *testing.T) {
	proctest.RequireRoot(t)
	cmd := startTree(t, "trap '' TERM; sleep 100 & sleep 100 & wait", 2)
	v := fleettest.View(t, model.Effective(nil, true))
	eng, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanSubtree(v, cmd.Process.Pid, PlanOptions{Grace: 3 * time.Second, ProcRoot: "/proc", Protected: eng.Protected()})
	if err != nil {
		t.Fatal(err)
	}
	f := plan.Facts()
	want := fmt.Sprintf("ignores SIGTERM: pid %d sh: will be SIGKILLed after the 3s grace", cmd.Process.Pid)
	if len(f.Resisters) != 3 || !strings.Contains(strings.Join(f.Resisters, "\n"), want) {
		t.Errorf("resisters %q, want all 3 (sh and two sleeps) with %q", f.Resisters, want)
	}
	var b strings.Builder
	plan.Write(&b)
	if !strings.Contains(b.String(), "resists:    "+want) {
		t.Errorf("the plan does not name the ignorer:\n%s", b.String())
	}
	var countdown []string
	tot := eng.Run(context.Background(), plan, func(ev Event) {
		if ev.Step == StepWait && strings.Contains(ev.Detail, "holding out") {
			countdown = append(countdown, ev.Detail)
		}
	})
	if !tot.OK() {
		t.Errorf("teardown not OK: %+v", tot)
	}
	if len(countdown) < 2 || !strings.Contains(countdown[0], fmt.Sprintf("%d sh (ignores SIGTERM)", cmd.Process.Pid)) || !strings.Contains(countdown[0], "of the grace left") {
		t.Errorf("the grace log does not count down naming the holdouts: %q", countdown)
	}
}

// The plan may come from a view a refresh old: a member's pid that another
// process took since is not read as the member's, whatever that process
// does with SIGTERM.
func TestResistersOfAPidsNewOwner(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "trap '' TERM; exec /bin/sleep 600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reap(cmd) })
	var id proc.Identity
	for range 100 { // until sh has exec'd sleep, which keeps SIG_IGN
		id = identity(t, cmd.Process.Pid)
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", id.PID)); strings.TrimSpace(string(b)) == "sleep" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range []struct {
		start uint64
		want  string
	}{{id.Start, "ignores SIGTERM"}, {id.Start - 1, ""}} {
		p := &Plan{Members: []Member{{Identity: proc.Identity{PID: id.PID, Start: c.start}}}}
		p.noteResisters("/proc")
		if got := p.Members[0].Resists; got != c.want {
			t.Errorf("member started at %d (the process at %d): resists %q, want %q", c.start, id.Start, got, c.want)
		}
	}
}

// TestPlanNamesNamespaceInitsWithoutHandler: an application run as pid 1
// of its own pid namespace (a container's init) with no SIGTERM handler
// never gets SIGTERM from outside; the plan says so. One that traps
// SIGTERM gets it, and is not named.
func TestPlanNamesNamespaceInitsWithoutHandler(t *testing.T) {
	proctest.RequireRoot(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		proctest.SkipMissing(t, "no unshare: %v", err)
	}
	for _, c := range []struct {
		script string
		named  bool
	}{
		{"exec sleep 100", true},
		{"trap 'exit 0' TERM; sleep 100 & wait", false},
	} {
		t.Run(c.script, func(t *testing.T) {
			cmd := exec.Command(unshare, "--pid", "--fork", "/bin/sh", "-c", c.script)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { reap(cmd) })
			kids := waitChildren(t, cmd.Process.Pid, 1)
			init := kids[0]
			// Until the child has exec'd (or trapped): its comm then
			// says so, or its SigCgt has SIGTERM.
			for range 200 {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", init))
				if strings.Contains(string(b), "Name:\tsleep") || statusMask(b, "SigCgt")&(1<<14) != 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			v := fleettest.View(t, model.Effective(nil, true))
			plan, err := PlanSubtree(v, cmd.Process.Pid, PlanOptions{Grace: time.Second, ProcRoot: "/proc"})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(plan.Facts().Resisters, "\n")
			want := fmt.Sprintf("gets no SIGTERM as pid 1 of its namespace without a handler: pid %d", init)
			if strings.Contains(got, want) != c.named {
				t.Errorf("resisters %q; want %q named: %v", got, want, c.named)
			}
		})
	}
}
