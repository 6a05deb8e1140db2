package teardown

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// nobody is the unprivileged user the permission test runs as.
const nobody = 65534

// permReport is what the unprivileged child saw and did.
type permReport struct {
	Procs, PartlyUnreadable int
	// Found maps each target ID to the number of members the model gave it.
	Found  map[string]int
	Events []Event
	Totals map[string]Totals
}

// TestTorturePermissions runs a scan and a teardown as an unprivileged user
// (uid 65534) against root's sandboxes. The scan must work with partial
// data; the teardown must fail with EPERM ("needs root") for each process,
// report every one as a survivor, and touch nothing: every process of the
// fleet lives on, by identity.
func TestTorturePermissions(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0},
		{Name: "box", Runtime: fleet.Docker, Leaves: 2},
	}})
	m := f.Manifest()
	var before []fleet.Process
	for _, p := range append(m.Processes(), m.Owner) {
		if alive(p.Identity) {
			before = append(before, p)
		}
	}
	ids := []string{m.Sandbox("vm").ID, m.Sandbox("box").ID}

	cmd := childCmd(t, proctest.NobodyBinary(t), "TestTorturePermissionsChild", "TORTURE_TARGETS="+strings.Join(ids, ","))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	cmd.Dir = "/"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := runChild(ctx, cmd)
	if err != nil {
		t.Fatalf("unprivileged child: %v\n%s", err, out)
	}
	var rep permReport
	for _, l := range strings.Split(out, "\n") {
		if _, js, ok := strings.Cut(l, "PERMREPORT "); ok {
			if err := json.Unmarshal([]byte(js), &rep); err != nil {
				t.Fatalf("child report: %v", err)
			}
		}
	}
	if rep.Found == nil {
		t.Fatalf("no report from the child:\n%s", out)
	}

	if rep.Procs == 0 || rep.PartlyUnreadable == 0 {
		t.Errorf("unprivileged scan: %d processes, %d partly unreadable; want some of each", rep.Procs, rep.PartlyUnreadable)
	}
	eperm, signalled := 0, 0
	for _, ev := range rep.Events {
		switch {
		case ev.Status == Fail && ev.PID != 0 && ev.Error == "EPERM":
			eperm++
			if !strings.Contains(ev.Detail, "root") {
				t.Errorf("EPERM event does not say it needs root: %s", ev.Text())
			}
		case ev.Status == Fail && ev.Step != StepVerify && ev.Step != StepDone:
			t.Errorf("unexpected failure: %s", ev.Text())
		case ev.Status == OK && ev.Signal != "" && ev.PID != 0:
			signalled++
			t.Errorf("a signal went through: %s", ev.Text())
		}
	}
	members := 0
	for _, id := range ids {
		n, ok := rep.Found[id]
		if !ok || n == 0 {
			t.Errorf("sandbox %s not found by the unprivileged scan", id)
		}
		members += n
		tot := rep.Totals[id]
		if tot.OK() || len(tot.Survivors) != n || tot.Killed != 0 {
			t.Errorf("sandbox %s: totals %+v; want every one of %d members a survivor (exit status 1)", id, tot, n)
		}
	}
	if eperm < members {
		t.Errorf("%d EPERM events for %d members: want at least one per process", eperm, members)
	}
	harmed := 0
	for _, p := range before {
		if !alive(p.Identity) {
			harmed++
			t.Errorf("touched: %v %s (%s)", p.Identity, p.Comm, p.Role)
		}
		if _, st, err := proc.ReadIdentity("/proc", p.PID); err == nil && (st == 'T' || st == 't') {
			t.Errorf("stopped: %v %s (%s)", p.Identity, p.Comm, p.Role)
		}
	}
	figures(t, "permissions", "procs_seen", rep.Procs, "partly_unreadable", rep.PartlyUnreadable,
		"members", members, "eperm_events", eperm, "signals_delivered", signalled, "processes_touched", harmed)
}

// TestTorturePermissionsChild runs as uid 65534: it scans, then tries to
// tear down each sandbox named in TORTURE_TARGETS, and reports.
func TestTorturePermissionsChild(t *testing.T) {
	childRole(t, "TestTorturePermissionsChild")
	if os.Geteuid() == 0 {
		t.Fatal("the permissions child must not run as root")
	}
	rules := model.Effective(nil, true)
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	snap, err := sc.Scan()
	if err != nil {
		t.Fatalf("unprivileged scan: %v", err)
	}
	v := model.Build(snap, rules, nil)
	rep := permReport{Procs: len(snap.Procs), PartlyUnreadable: snap.PartlyUnreadable, Found: map[string]int{}, Totals: map[string]Totals{}}
	eng, err := New(Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range strings.Split(os.Getenv("TORTURE_TARGETS"), ",") {
		sb, err := v.Resolve(id)
		if err != nil {
			t.Errorf("resolve %s: %v", id, err)
			continue
		}
		plan, err := PlanSandbox(v, sb, PlanOptions{Grace: 100 * time.Millisecond, Deadline: 300 * time.Millisecond, Protected: eng.Protected()})
		if err != nil {
			t.Errorf("plan %s: %v", id, err)
			continue
		}
		rep.Found[id] = len(plan.Members)
		rep.Totals[id] = eng.Run(context.Background(), plan, func(ev Event) { rep.Events = append(rep.Events, ev) })
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PERMREPORT %s", js)
}
