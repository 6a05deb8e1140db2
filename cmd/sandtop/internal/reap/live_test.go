package reap

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
	"github.com/sandtop/sandtop/teardown"
)

// TestReapOldOrphans: old orphans are reaped, oldest first and at most
// --max a pass; fresh orphans, supervised sandboxes and bystanders never.
func TestReapOldOrphans(t *testing.T) {
	old := fleettest.Start(t, fleet.Spec{
		Sandboxes: []fleet.SandboxSpec{
			{Name: "vm-orphan", Runtime: fleet.VM0, Orphan: true},
			{Name: "ctr-orphan", Runtime: fleet.Containerd, Orphan: true},
			{Name: "cube-orphan", Runtime: fleet.Cube, Orphan: true},
			{Name: "vm-healthy", Runtime: fleet.VM0},
			{Name: "ctr-healthy", Runtime: fleet.Containerd},
		},
		Bystanders: []fleet.BystanderSpec{
			{Role: "bystander-cgroup", Argv: []string{"ctr", "events"}, CgroupOf: "ctr-healthy"},
			{Role: "bystander-sibling", Argv: []string{"node_exporter"}, SiblingOf: "vm-healthy"},
		},
	})
	const minAge = 4 * time.Second
	time.Sleep(minAge)
	fresh := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm-fresh", Runtime: fleet.VM0, Orphan: true},
	}})
	mo, mf := old.Manifest(), fresh.Manifest()
	sel, texts := selectFleet(t, []string{"orphan", "leftover"}, mo, mf)
	h := newHarness(t, Config{
		Policy:  Policy{For: time.Second, MinAge: minAge, Max: 2},
		Selects: sel, Texts: texts, Interval: 200 * time.Millisecond, Once: true, Apply: true,
	}, fleetRules(mo, mf))
	h.run(t, time.Minute)

	last := h.last(t)
	var reaped, deferred []string
	for _, name := range []string{"vm-orphan", "ctr-orphan", "cube-orphan"} {
		s := mo.Sandbox(name)
		switch e := last[s.ID]; e.Action {
		case "reaped":
			reaped = append(reaped, name)
			if !noneAlive(s) {
				t.Errorf("%s reaped but processes live on", name)
			}
			if !strings.Contains(e.Reason, "orphan") || !strings.Contains(e.Reason, "for ") {
				t.Errorf("%s: reason %q", name, e.Reason)
			}
		case "defer":
			deferred = append(deferred, name)
			if !allAlive(s) {
				t.Errorf("%s deferred but harmed", name)
			}
		default:
			t.Errorf("%s: last action %q (%s), want reaped or defer", name, e.Action, e.Reason)
		}
	}
	if len(reaped) != 2 || len(deferred) != 1 {
		t.Errorf("reaped %v, deferred %v: want --max 2 reaped and one deferred", reaped, deferred)
	}
	// Oldest first: the deferred one is no older than any reaped one.
	for _, r := range reaped {
		if last[mo.Sandbox(r).ID].AgeSeconds < last[mo.Sandbox(deferred[0]).ID].AgeSeconds {
			t.Errorf("reaped %s (age %vs) before the older %s (age %vs)", r, last[mo.Sandbox(r).ID].AgeSeconds, deferred[0], last[mo.Sandbox(deferred[0]).ID].AgeSeconds)
		}
	}
	vf := mf.Sandbox("vm-fresh")
	if e := last[vf.ID]; e.Action != "wait" || !strings.Contains(e.Reason, "of 4s") || !allAlive(vf) {
		t.Errorf("fresh orphan: %q (%s), alive %v; want wait for --min-age", e.Action, e.Reason, allAlive(vf))
	}
	for _, name := range []string{"vm-healthy", "ctr-healthy"} {
		s := mo.Sandbox(name)
		if _, seen := last[s.ID]; seen || !allAlive(s) {
			t.Errorf("supervised %s: selected %v, alive %v", name, seen, allAlive(s))
		}
	}
	for _, b := range mo.Bystanders {
		if !alive(b.Identity) {
			t.Errorf("bystander %s %s harmed", b.Role, b.Identity)
		}
	}
	recs := h.auditRecords(t)
	if len(recs) != 2 {
		t.Fatalf("%d audit records, want one per teardown (2)", len(recs))
	}
	for _, r := range recs {
		if r.Via != "reap" || !strings.HasPrefix(r.Reason, "reaper: orphan") || !strings.Contains(r.Reason, "selection") {
			t.Errorf("audit record: via %q, reason %q", r.Via, r.Reason)
		}
	}
}

// TestReapBouncingSupervisor: a supervisor that comes back within --for
// (containerd listening again; a vm0 runner replaced by a new one that
// starts its run again) starts the clock again: nothing is reaped, though
// both sandboxes were orphans at the first scan and at the last. Once they
// stay orphaned for --for, they are reaped.
func TestReapBouncingSupervisor(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "ctr", Runtime: fleet.Containerd, Orphan: true},
		{Name: "vm", Runtime: fleet.VM0, Orphan: true},
	}})
	m := f.Manifest()
	sel, texts := selectFleet(t, []string{"orphan"}, m)
	// MaxGap as the CLI sets it: on a loaded host a scan can come late,
	// and a bounce no scan saw must not let the clock run on. --for leaves
	// room for the bounce and the second kill to finish before the final
	// pass, even where starting a supervisor again takes seconds.
	cfg := Config{
		Policy:  Policy{For: 8 * time.Second, MaxGap: time.Second},
		Selects: sel, Texts: texts, Interval: 100 * time.Millisecond, Once: true, Apply: true,
	}
	h := newHarness(t, cfg, fleetRules(m))
	bounced := make(chan error, 1)
	go func() {
		time.Sleep(1200 * time.Millisecond)
		for _, name := range []string{"ctr", "vm"} {
			if err := f.BounceSupervisor(name); err != nil {
				bounced <- err
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
		for _, name := range []string{"ctr", "vm"} {
			if err := f.KillSupervisor(name); err != nil {
				bounced <- err
				return
			}
		}
		bounced <- nil
	}()
	h.run(t, time.Minute)
	if err := <-bounced; err != nil {
		t.Fatal(err)
	}
	m = f.Manifest()
	for _, name := range []string{"ctr", "vm"} {
		s := m.Sandbox(name)
		e := h.last(t)[s.ID]
		if e.Action != "wait" || !allAlive(s) {
			t.Errorf("%s after a bounce within --for: %q (%s), alive %v", name, e.Action, e.Reason, allAlive(s))
		}
	}
	for _, e := range h.entries(t) {
		if e.Action == "reaped" || e.Action == "failed" {
			t.Errorf("reaped during the bounce: %+v", e)
		}
	}

	// Now they stay orphaned: the next run reaps both.
	h2 := newHarness(t, Config{Policy: Policy{For: time.Second}, Selects: sel, Texts: texts, Interval: 100 * time.Millisecond, Once: true, Apply: true}, fleetRules(m))
	h2.run(t, time.Minute)
	for _, name := range []string{"ctr", "vm"} {
		s := m.Sandbox(name)
		if e := h2.last(t)[s.ID]; e.Action != "reaped" || !noneAlive(s) {
			t.Errorf("%s orphaned for --for: %q (%s)", name, e.Action, e.Reason)
		}
	}
}

// TestReapDryRun: without --apply every candidate is logged with what
// would be done, and nothing is touched.
func TestReapDryRun(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0, Orphan: true},
		{Name: "ctr", Runtime: fleet.Containerd, Orphan: true},
	}})
	m := f.Manifest()
	sel, texts := selectFleet(t, []string{"orphan"}, m)
	h := newHarness(t, Config{Policy: Policy{}, Selects: sel, Texts: texts, Interval: 100 * time.Millisecond, Once: true}, fleetRules(m))
	h.run(t, time.Minute)
	for _, s := range m.Sandboxes {
		e := h.last(t)[s.ID]
		if e.Action != "would-reap" || !strings.Contains(e.Plan, "SIGTERM") || !allAlive(&s) {
			t.Errorf("%s: %q plan %q alive %v", s.Name, e.Action, e.Plan, allAlive(&s))
		}
	}
	if s := m.Sandbox("vm"); !strings.Contains(h.last(t)[s.ID].Plan, "workspaces/"+s.ID) {
		t.Errorf("vm0 dry run does not say it would remove the workspace: %q", h.last(t)[s.ID].Plan)
	}
	if recs := h.auditRecords(t); len(recs) != 0 {
		t.Errorf("a dry run wrote %d audit records", len(recs))
	}
}

// TestReapPIDReuse: the orphan dies and its root's pid is taken by another
// process between the reaper's selection and the engine's pin: nothing
// but the orphan's own processes is signalled.
func TestReapPIDReuse(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "ctr", Runtime: fleet.Containerd, Orphan: true},
	}})
	m := f.Manifest()
	s := m.Sandbox("ctr")
	sel, texts := selectFleet(t, []string{"orphan"}, m)
	h := newHarness(t, Config{Policy: Policy{}, Selects: sel, Texts: texts, Interval: 100 * time.Millisecond, Once: true, Apply: true}, fleetRules(m))
	var stranger *teardown.Pinned
	var strangerPID int
	h.r.beforeTeardown = func(p *teardown.Plan) {
		root := s.Root()
		killByHand(t, s)
		for attempt := 0; attempt < 50; attempt++ {
			if cmd, ok := proctest.ForkAtPID(t, root.PID); ok {
				strangerPID = cmd.Process.Pid
				st, err := proc.ReadStat("/proc", strangerPID)
				if err != nil {
					t.Fatal(err)
				}
				if stranger, err = teardown.Pin("/proc", proc.Identity{PID: st.PID, Start: st.Start}); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		t.Skip("could not recycle the root's pid: the host forks too much")
	}
	h.run(t, time.Minute)
	if stranger == nil {
		t.Fatal("the teardown hook never ran")
	}
	defer stranger.Close()
	if exited, err := stranger.Exited(); err != nil || exited {
		t.Fatalf("the process that took pid %d was signalled (exited %v, %v)", strangerPID, exited, err)
	}
	e := h.last(t)[s.ID]
	if e.Result == nil || e.Result.Killed != 0 {
		t.Errorf("decision %q result %+v: want a teardown that killed nothing", e.Action, e.Result)
	}
	if !slices.ContainsFunc(h.entries(t), func(e Entry) bool { return e.ID == s.ID && e.Result != nil }) {
		t.Error("no teardown logged")
	}
}

// TestReapStopFinishesTeardown: SIGTERM (stop) during a teardown lets that
// teardown finish, with its audit record, and reaps nothing more.
func TestReapStopFinishesTeardown(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "a", Runtime: fleet.Containerd, Orphan: true},
		{Name: "b", Runtime: fleet.Containerd, Orphan: true},
	}})
	m := f.Manifest()
	sel, texts := selectFleet(t, []string{"orphan"}, m)
	h := newHarness(t, Config{Policy: Policy{}, Selects: sel, Texts: texts, Interval: 100 * time.Millisecond, Once: true, Apply: true}, fleetRules(m))
	stop := make(chan struct{})
	h.r.beforeTeardown = func(*teardown.Plan) {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}
	if err := h.r.Run(t.Context(), stop); err != nil {
		t.Fatal(err)
	}
	var reaped, stopped []string
	for _, s := range m.Sandboxes {
		switch e := h.last(t)[s.ID]; {
		case e.Action == "reaped" && noneAlive(&s):
			reaped = append(reaped, s.Name)
		case e.Action == "skip" && strings.Contains(e.Reason, "stopping") && allAlive(&s):
			stopped = append(stopped, s.Name)
		default:
			t.Errorf("%s: %q (%s)", s.Name, e.Action, e.Reason)
		}
	}
	if len(reaped) != 1 || len(stopped) != 1 || len(h.auditRecords(t)) != 1 {
		t.Errorf("reaped %v, stopped %v, %d audit records: want the teardown under way finished and no other", reaped, stopped, len(h.auditRecords(t)))
	}
}
