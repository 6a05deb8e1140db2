package teardown

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// sandboxesPerFleet is how many sandboxes one fleet holds; each is torn
// down as one trial while the others, the supervisors and the bystanders
// stand next to it.
const sandboxesPerFleet = 4

// randomSpec draws a fleet of n sandboxes of random runtimes and
// behaviours, each with bystanders in its cgroup, beside its root, or both.
// A bystander in a sandbox's cgroup also takes that cgroup's dedication
// away, so the draw covers teardowns with and without cgroup.kill.
func randomSpec(rng *rand.Rand, n, fleetNo int) fleet.Spec {
	var spec fleet.Spec
	pauses := []fleet.Pause{fleet.NotPaused, fleet.NotPaused, fleet.PauseFreeze, fleet.PauseFreezerV1, fleet.PauseStop}
	for i := range n {
		sb := fleet.SandboxSpec{
			Name:       fmt.Sprintf("t%d-%d", fleetNo, i),
			Runtime:    fleet.Runtimes[rng.IntN(len(fleet.Runtimes))],
			Detached:   rng.IntN(2) == 0,
			Pause:      pauses[rng.IntN(len(pauses))],
			Zombies:    rng.IntN(3),
			Escape:     rng.IntN(3) == 0,
			IgnoreTERM: rng.IntN(3) == 0,
			Forker:     rng.IntN(4) == 0,
			Leaves:     rng.IntN(6),
		}
		// Only runtimes with a supervisor can be orphaned (the jailer, podman,
		// machines and detached boxes have none).
		sb.Orphan = hasSupervisor(sb) && rng.IntN(4) == 0
		spec.Sandboxes = append(spec.Sandboxes, sb)
		cgroupMate, sibling := rng.IntN(2) == 0, rng.IntN(2) == 0
		if !cgroupMate && !sibling {
			cgroupMate, sibling = rng.IntN(2) == 0, true
		}
		if sb.Pause == fleet.PauseFreezerV1 && cgroupMate {
			// A v1 freezer shared with a bystander cannot be thawed
			// without thawing the bystander, and a v1-frozen task dies
			// of SIGKILL only once thawed: that shape has a test of its
			// own (TestTortureSharedV1Freezer).
			cgroupMate, sibling = false, true
		}
		if cgroupMate {
			spec.Bystanders = append(spec.Bystanders, fleet.BystanderSpec{
				Role: "cgroup-mate-" + sb.Name, Argv: []string{"cgroup-mate", "--of", sb.Name}, CgroupOf: sb.Name})
		}
		if sibling {
			spec.Bystanders = append(spec.Bystanders, fleet.BystanderSpec{
				Role: "sibling-" + sb.Name, Argv: []string{"sibling", "--of", sb.Name}, SiblingOf: sb.Name})
		}
	}
	return spec
}

func hasSupervisor(sb fleet.SandboxSpec) bool {
	switch sb.Runtime {
	case fleet.Jailer, fleet.Machine, fleet.Podman:
		return false
	case fleet.Boxlite:
		return !sb.Detached
	}
	return true
}

// trial is the outcome of one torture teardown.
type trial struct {
	killed, survivors, harmed, checked int
	cgroupKill                         bool
	elapsed                            time.Duration
	fdDelta                            int
}

// TestTortureTrials tears down TORTURE_N randomly shaped sandboxes, each
// beside bystanders that share its cgroup or its parent, and counts what
// survived of the target and what was harmed outside it (both must be 0),
// by identity (pid + start time).
func TestTortureTrials(t *testing.T) {
	proctest.RequireRoot(t)
	n := envInt(t, "TORTURE_N", defaultTrials)
	rng := rand.New(rand.NewPCG(tortureSeed(t), 7))
	var (
		times                                       []time.Duration
		killed, survivors, harmed, checked, cgKills int
		fdLeaks                                     int
	)
	done := 0
	for fleetNo := 0; done < n; fleetNo++ {
		k := min(sandboxesPerFleet, n-done)
		spec := randomSpec(rng, k, fleetNo)
		order := rng.Perm(k)
		graces := make([]time.Duration, k)
		for i := range graces {
			graces[i] = []time.Duration{0, 150 * time.Millisecond, 400 * time.Millisecond}[rng.IntN(3)]
		}
		ok := t.Run(fmt.Sprintf("fleet%d", fleetNo), func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					js, err := json.Marshal(spec)
					t.Logf("spec: %s (%v)", js, err)
				}
			})
			f := fleettest.Start(t, spec)
			if spec.Sandboxes[0].Forker || spec.Sandboxes[k-1].Forker {
				time.Sleep(50 * time.Millisecond) // let fork loops get going
			}
			for _, i := range order {
				name := spec.Sandboxes[i].Name
				r := tortureTeardown(t, f, name, graces[i])
				t.Logf("%s (%s): %d killed in %s, grace %s, cgroup.kill %v", name, spec.Sandboxes[i].Runtime,
					r.killed, r.elapsed.Round(time.Millisecond), graces[i], r.cgroupKill)
				times = append(times, r.elapsed)
				killed += r.killed
				survivors += r.survivors
				harmed += r.harmed
				checked += r.checked
				if r.cgroupKill {
					cgKills++
				}
				if r.fdDelta != 0 {
					fdLeaks++
					t.Errorf("%s: %d file descriptors more after the teardown than before", name, r.fdDelta)
				}
			}
		})
		if !ok {
			break
		}
		done += k
	}
	figures(t, "trials", "trials", len(times), "killed", killed, "survivors", survivors, "bystanders_checked", checked,
		"bystanders_harmed", harmed, "cgroup_kill_trials", cgKills, "fd_leaking_runs", fdLeaks,
		"p50", percentile(times, 50).Round(time.Millisecond), "p99", percentile(times, 99).Round(time.Millisecond),
		"max", percentile(times, 100).Round(time.Millisecond))
	if survivors != 0 || harmed != 0 {
		t.Errorf("%d survivors, %d bystanders harmed; both must be 0", survivors, harmed)
	}
}

// tortureTeardown tears down the fleet's sandbox name and counts, rather
// than only reports, what survived and what was harmed. A survivor is a
// process the plan or the pre-teardown view gave the sandbox that is still
// alive (same pid and start time), a member a fresh scan still attributes
// to it, or a pid still in its dedicated cgroup. A harmed bystander is any
// other process of the fleet (its owner, supervisors, bystanders, other
// sandboxes) that lived before and neither lives nor is a zombie after.
func tortureTeardown(t *testing.T, f *fleet.Fleet, name string, grace time.Duration) trial {
	t.Helper()
	var tr trial
	failedBefore := t.Failed()
	m := f.Manifest()
	target := m.Sandbox(name)
	rules := model.Effective(nil, true)
	v := fleettest.View(t, rules)
	sb, err := v.Resolve(target.ID)
	if err != nil {
		t.Errorf("%s (%s %s) not found by the model: %v", name, target.Runtime, target.ID, err)
		return tr
	}
	var others []fleet.Process
	for _, p := range append(m.Processes(), m.Owner) {
		if v.SandboxOf(p.Identity) != sb && alive(p.Identity) {
			others = append(others, p)
		}
	}
	tr.checked = len(others)
	eng, err := New(Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanSandbox(v, sb, PlanOptions{Grace: grace, Protected: eng.Protected()})
	if err != nil {
		t.Errorf("plan %s: %v", name, err)
		return tr
	}
	var events []Event
	fds := openFDs(t)
	start := time.Now()
	tot := eng.Run(context.Background(), plan, func(ev Event) { events = append(events, ev) })
	tr.elapsed = time.Since(start)
	tr.fdDelta = openFDs(t) - fds
	tr.killed = tot.Killed
	for _, ev := range events {
		tr.cgroupKill = tr.cgroupKill || (ev.Step == StepCgroupKill && ev.Status == OK)
	}

	left := map[proc.Identity]string{}
	for _, mb := range plan.Members {
		if alive(mb.Identity) {
			left[mb.Identity] = mb.Comm
		}
	}
	for _, p := range target.Processes {
		if v.SandboxOf(p.Identity) == sb && alive(p.Identity) {
			left[p.Identity] = p.Comm
		}
	}
	after := fleettest.View(t, rules)
	if sbAfter := after.Sandbox(sb.ID); sbAfter != nil && !sbAfter.Dead {
		for _, mb := range sbAfter.Members {
			if !mb.Zombie() {
				left[mb.ID()] = mb.Comm
			}
		}
	}
	if plan.CgroupDir != "" {
		if pids, err := proc.ReadCgroupProcs(plan.CgroupDir); err == nil {
			for _, pid := range pids {
				if id, st, err := proc.ReadIdentity("/proc", pid); err == nil && st != 'Z' {
					left[id] = "in " + plan.Cgroup
				}
			}
		}
	}
	for id, comm := range left {
		t.Errorf("%s (%s): survivor %v %s", name, sb.Runtime, id, comm)
	}
	tr.survivors = len(left)
	for _, p := range others {
		if !alive(p.Identity) && !zombie(p.Identity) {
			tr.harmed++
			t.Errorf("%s (%s): bystander harmed: %v %s (%s)", name, sb.Runtime, p.Identity, p.Comm, p.Role)
		}
	}
	if !tot.OK() && len(left) == 0 {
		t.Errorf("%s (%s): teardown reported failure: %+v", name, sb.Runtime, tot)
	}
	if t.Failed() && !failedBefore {
		var b strings.Builder
		plan.Write(&b)
		t.Logf("plan:\n%s", b.String())
		for _, ev := range events {
			t.Logf("[%s] %s", ev.Status, ev.Text())
		}
	}
	return tr
}

// TestTortureSharedV1Freezer is the one shape the random trials leave out:
// a sandbox paused by a v1 freezer that it shares with a bystander. The
// engine must not thaw the bystander, so SIGKILL stays pending on the
// frozen target (freezer-subsystem.rst: a frozen task acts on no signal).
// Whatever the engine does about that, it must never be silent: either the
// sandbox dies, or the done event fails and names each survivor with the
// freezer as its reason; and the bystander is left alive and frozen.
func TestTortureSharedV1Freezer(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{
		Sandboxes: []fleet.SandboxSpec{{Name: "paused", Runtime: fleet.Cube, Pause: fleet.PauseFreezerV1}},
		Bystanders: []fleet.BystanderSpec{
			{Role: "cgroup-mate", Argv: []string{"cgroup-mate", "--wait"}, CgroupOf: "paused"},
		},
	})
	m := f.Manifest()
	if m.Sandbox("paused").Paused != fleet.PauseFreezerV1 {
		t.Skip("no v1 freezer on this host")
	}
	mate := m.Bystanders[0]
	rules := model.Effective(nil, true)
	v := fleettest.View(t, rules)
	sb, err := v.Resolve(m.Sandbox("paused").ID)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := New(Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanSandbox(v, sb, PlanOptions{Grace: 0, Deadline: time.Second, Protected: eng.Protected()})
	if err != nil {
		t.Fatal(err)
	}
	if plan.FreezerDir != "" {
		t.Fatalf("a freezer shared with a bystander was planned as dedicated: %s", plan.Freezer)
	}
	tot := eng.Run(context.Background(), plan, func(ev Event) { t.Logf("[%s] %s", ev.Status, ev.Text()) })
	reported := map[int]string{}
	for _, s := range tot.Survivors {
		reported[s.PID] = s.Reason
	}
	for _, mb := range plan.Members {
		if !alive(mb.Identity) {
			continue
		}
		if r, ok := reported[mb.PID]; !ok || !strings.Contains(r, "freezer") {
			t.Errorf("%v %s survived silently (reported reason %q)", mb.Identity, mb.Comm, r)
		}
	}
	if tot.OK() != (len(tot.Survivors) == 0) {
		t.Errorf("totals %+v: OK() must be false while anything survives", tot)
	}
	_, st, err := proc.ReadIdentity("/proc", mate.PID)
	if !alive(mate.Identity) || err != nil || st == 'T' {
		t.Errorf("the bystander in the shared freezer was touched: alive %v, state %c, %v", alive(mate.Identity), st, err)
	}
	t.Logf("TORTURE shared-v1-freezer: members=%d survivors_reported=%d killed=%d", len(plan.Members), len(tot.Survivors), tot.Killed)
}

// TestTortureV1FrozenWithZombie is the smallest shape the random trials
// found to survive: a sandbox paused by its own v1 freezer that has a
// zombie member. An exited task shows "/" for every v1 hierarchy in
// /proc/PID/cgroup (the kernel moves it out of its v1 cgroups on exit), so
// the zombie must not count against the freezer being the sandbox's own;
// otherwise the freezer is never thawed and SIGKILL never lands.
func TestTortureV1FrozenWithZombie(t *testing.T) {
	for _, grace := range []time.Duration{0, 200 * time.Millisecond} {
		t.Run(fmt.Sprintf("grace=%s", grace), func(t *testing.T) {
			f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
				{Name: "paused", Runtime: fleet.Cube, Pause: fleet.PauseFreezerV1, Zombies: 1},
			}})
			if f.Manifest().Sandbox("paused").Paused != fleet.PauseFreezerV1 {
				t.Skip("no v1 freezer on this host")
			}
			r := tortureTeardown(t, f, "paused", grace)
			if r.survivors != 0 || r.harmed != 0 {
				t.Errorf("%d survivors, %d harmed", r.survivors, r.harmed)
			}
		})
	}
}
