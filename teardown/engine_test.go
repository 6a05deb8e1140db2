package teardown

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/words"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// TestMain lets the test binary serve as the sandsim fleet's owner and
// nodes, and makes it a child subreaper so nothing a fleet strands ends up
// under a PID 1 that does not reap.
func TestMain(m *testing.M) { fleet.Main(m) }

// result is one teardown as the tests see it.
type result struct {
	plan    *Plan
	totals  Totals
	events  []Event
	elapsed time.Duration
	// scans counts the host scans the teardown made.
	scans int64
}

func (r result) has(step Step, status Status, detail string) bool {
	for _, ev := range r.events {
		if ev.Step == step && ev.Status == status && strings.Contains(ev.Detail, detail) {
			return true
		}
	}
	return false
}

// tearDown plans and runs the teardown of the fleet's sandbox called name,
// and checks what every test must hold: nothing of the sandbox survives,
// every other process that lived before still lives, and a fresh scan
// finds no live member.
func tearDown(t *testing.T, f *fleet.Fleet, name string, grace time.Duration) result {
	t.Helper()
	m := f.Manifest()
	target := m.Sandbox(name)
	if target == nil {
		t.Fatalf("no sandbox %q in the fleet", name)
	}
	rules := model.Effective(nil, true)
	v := fleettest.View(t, rules)
	sb, err := v.Resolve(target.ID)
	if err != nil {
		t.Fatalf("sandbox %s (%s) not found by the model: %v", name, target.ID, err)
	}
	// Everything else of the fleet that is alive now must be alive after.
	var others []fleet.Process
	for _, p := range append(m.Processes(), m.Owner) {
		if v.SandboxOf(p.Identity) != sb && alive(p.Identity) {
			others = append(others, p)
		}
	}
	eng, err := New(Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanSandbox(v, sb, PlanOptions{Grace: grace, Protected: eng.Protected()})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var r result
	r.plan = plan
	start := time.Now()
	r.totals = eng.Run(context.Background(), plan, func(ev Event) {
		r.events = append(r.events, ev)
		t.Logf("[%s] %s", ev.Status, ev.Text())
	})
	r.elapsed = time.Since(start)
	r.scans = eng.scans.Load()
	t.Logf("TEARDOWN %s (%s): %d processes, %s: %s", name, sb.Runtime, len(plan.Members), plan.Strategy(), r.elapsed.Round(time.Millisecond))

	if !r.totals.OK() {
		t.Errorf("teardown of %s not OK: %+v", name, r.totals)
	}
	for _, p := range target.Processes {
		if sb.Supervisor != nil && p.PID == sb.Supervisor.PID {
			continue
		}
		if alive(p.Identity) && v.SandboxOf(p.Identity) == sb {
			t.Errorf("%s survived: %d %s (%s)", name, p.PID, p.Comm, p.Role)
		}
	}
	for _, p := range others {
		if !alive(p.Identity) && !zombie(p.Identity) {
			t.Errorf("bystander harmed: %d %s (%s)", p.PID, p.Comm, p.Role)
		}
	}
	after := fleettest.View(t, rules)
	if left := after.Sandbox(sb.ID); left != nil && !left.Dead {
		t.Errorf("fresh scan still finds %s with %d members", sb.ID, len(left.Members))
	}
	if plan.CgroupDir != "" {
		if pids, err := proc.ReadCgroupProcs(plan.CgroupDir); err == nil && len(pids) > 0 {
			t.Errorf("cgroup %s still holds %v", plan.Cgroup, pids)
		}
	}
	return r
}

// alive reports whether the identity still runs (a zombie does not).
func alive(id proc.Identity) bool {
	got, st, err := proc.ReadIdentity("/proc", id.PID)
	return err == nil && got.Start == id.Start && st != 'Z' && st != 'X'
}

func zombie(id proc.Identity) bool {
	got, st, err := proc.ReadIdentity("/proc", id.PID)
	return err == nil && got.Start == id.Start && st == 'Z'
}

// Seed 001 (Cloudflare sandbox SDK): killing only the root of a session
// tree left its children running. The whole 3-level tree must go, leaf
// first, with SIGTERM honoured inside the grace.
func TestTeardownSessionTree(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "session", Runtime: fleet.Cloudflare},
		{Name: "neighbour", Runtime: fleet.VM0},
	}})
	depth := 0
	for _, m := range fleettest.View(t, model.Effective(nil, true)).Sandbox(f.Manifest().Sandbox("session").ID).Members {
		depth = max(depth, m.Depth)
	}
	if depth < 2 {
		t.Fatalf("session tree depth %d, want at least 3 levels", depth+1)
	}
	r := tearDown(t, f, "session", DefaultGrace)
	terms := 0
	for _, ev := range r.events {
		if ev.Step == StepTerm && ev.Signal == "SIGTERM" {
			terms++
		}
	}
	// A leaf that is gone before the wait starts still counts.
	if want := fmt.Sprintf("%s exited after SIGTERM", words.All(terms, "process", "processes")); !r.has(StepWait, OK, want) {
		t.Errorf("the session tree should have exited on SIGTERM within the grace (%q)", want)
	}
	// Leaf first: every term event names a process before its parent.
	order := map[int]int{}
	for i, ev := range r.events {
		if ev.Step == StepTerm && ev.Signal == "SIGTERM" {
			order[ev.PID] = i
		}
	}
	for _, m := range r.plan.Members {
		if parent, ok := order[m.PPID]; ok && order[m.PID] > parent {
			t.Errorf("pid %d signalled after its parent %d", m.PID, m.PPID)
		}
	}
}

// Seed 000 (vm0 runner kill): the Firecracker launcher chain runs in its own
// process group under the runner. A managed sandbox is only killed (its
// runner cleans up); an orphan is killed and its workspace removed.
func TestTeardownVM0(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "managed", Runtime: fleet.VM0},
		{Name: "orphan", Runtime: fleet.VM0, Orphan: true},
	}})
	m := f.Manifest()
	workspace := func(name string) string {
		for _, d := range m.Sandbox(name).Dirs {
			if filepath.Base(filepath.Dir(d)) == "workspaces" {
				return d
			}
		}
		t.Fatalf("%s has no workspace dir in %v", name, m.Sandbox(name).Dirs)
		return ""
	}
	managedWS, orphanWS := workspace("managed"), workspace("orphan")

	r := tearDown(t, f, "managed", DefaultGrace)
	if !r.plan.Supervised || !r.has(StepCleanup, Skip, "cleans up after itself") {
		t.Errorf("managed sandbox: supervised %v; cleanup must be left to the runner", r.plan.Supervised)
	}
	if _, err := os.Stat(managedWS); err != nil {
		t.Errorf("managed workspace removed: %v", err)
	}
	if sup := m.Sandbox("managed").Supervisor; sup == nil || !alive(sup.Identity) {
		t.Error("the runner must survive the teardown of its sandbox")
	}

	r = tearDown(t, f, "orphan", DefaultGrace)
	if r.plan.Supervised {
		t.Fatal("orphan sandbox planned as supervised")
	}
	if !r.has(StepCleanup, OK, "removed "+orphanWS) {
		t.Errorf("orphan workspace %s not reported removed", orphanWS)
	}
	if !r.has(StepCleanup, OK, "/run/vm0/sock/"+m.Sandbox("orphan").ID+" already gone") {
		t.Error("a cleanup path that never existed must count as done")
	}
	if _, err := os.Stat(orphanWS); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan workspace still there: %v", err)
	}
}

// Seeds 002 and 004 (boxlite): killing the outer bwrap leaves the inner
// pid-namespace tree running. The box's dedicated cgroup is killed whole.
func TestTeardownBoxInPidNamespace(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "box", Runtime: fleet.Boxlite, Detached: true},
		{Name: "other-box", Runtime: fleet.Boxlite, Detached: true},
	}})
	if !f.Manifest().Sandbox("box").PidNS {
		proctest.SkipMissing(t, "no nested pid namespace on this host")
	}
	r := tearDown(t, f, "box", DefaultGrace)
	if r.plan.Cgroup == "" || !r.has(StepCleanup, OK, "removed cgroup") {
		t.Errorf("box: cgroup %q; its dedicated cgroup must be used and removed", r.plan.Cgroup)
	}
	r = tearDown(t, f, "other-box", 0)
	if !r.has(StepCgroupKill, OK, "killed every process") {
		t.Error("immediate teardown of a box in its own cgroup must use cgroup.kill")
	}
}

// Seed 003 (CubeSandbox): a paused sandbox cannot answer its runtime, and a
// frozen task cannot act on SIGTERM: thaw, then kill. Also a v1-frozen
// sandbox (its tasks die only on thaw) and a SIGSTOPped one.
func TestTeardownPaused(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "frozen-v2", Runtime: fleet.Cube, Pause: fleet.PauseFreeze},
		{Name: "frozen-v1", Runtime: fleet.Cube, Pause: fleet.PauseFreezerV1},
		{Name: "stopped", Runtime: fleet.Docker, Pause: fleet.PauseStop},
	}})
	for _, name := range []string{"frozen-v2", "frozen-v1", "stopped"} {
		t.Run(name, func(t *testing.T) {
			if got := f.Manifest().Sandbox(name).Paused; got == fleet.NotPaused {
				t.Skipf("the fleet could not pause %s here", name)
			}
			r := tearDown(t, f, name, DefaultGrace)
			if name != "stopped" && !r.has(StepThaw, OK, "thawed") {
				t.Error("a frozen sandbox must be thawed before SIGTERM")
			}
			if !r.has(StepWait, OK, "exited after SIGTERM") {
				t.Error("SIGTERM (+SIGCONT) should have ended a paused sandbox within the grace")
			}
		})
	}
}

// A member that ignores SIGTERM is killed once the grace runs out.
func TestTeardownIgnoresSIGTERM(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "stubborn", Runtime: fleet.Containerd, IgnoreTERM: true},
		{Name: "stubborn-vm", Runtime: fleet.VM0, IgnoreTERM: true},
	}})
	const grace = 300 * time.Millisecond
	for _, name := range []string{"stubborn", "stubborn-vm"} {
		r := tearDown(t, f, name, grace)
		if !r.has(StepWait, OK, "escalating to SIGKILL") {
			t.Errorf("%s: expected escalation after the grace", name)
		}
		if r.elapsed < grace {
			t.Errorf("%s: done in %s, before the grace ran out", name, r.elapsed)
		}
	}
}

// A tree that keeps forking while it is killed, with a dedicated cgroup
// (cgroup.kill catches the newborn) and without (stopped top-down first).
func TestTeardownForker(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "forker-cgroup", Runtime: fleet.Docker, Forker: true},
		{Name: "forker-tree", Runtime: fleet.VM0, Forker: true},
	}})
	// Tear down only once both are forking: a process of each has a child
	// the manifest does not list.
	forking := func(name string) bool {
		sb := f.Manifest().Sandbox(name)
		known := map[int]bool{}
		for _, p := range sb.Processes {
			known[p.PID] = true
		}
		for _, p := range sb.Processes {
			kids, _ := proc.Children("/proc", p.PID)
			for _, k := range kids {
				if !known[k] {
					return true
				}
			}
		}
		return false
	}
	if !proctest.Eventually(10*time.Second, func() bool { return forking("forker-cgroup") && forking("forker-tree") }) {
		t.Fatal("the forkers forked nothing in 10s")
	}
	for _, name := range []string{"forker-cgroup", "forker-tree"} {
		r := tearDown(t, f, name, 0)
		if name == "forker-tree" && r.plan.CgroupDir != "" {
			t.Errorf("%s: expected no dedicated cgroup", name)
		}
	}
}

// An escaped double-forked child left the tree but not the cgroup: the
// model finds it there and the cgroup kill takes it.
func TestTeardownEscapedChild(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "escape", Runtime: fleet.Docker, Escape: true},
		{Name: "neighbour", Runtime: fleet.Docker},
	}})
	escaped := f.Manifest().Sandbox("escape").Role(fleet.RoleEscaped)
	if len(escaped) == 0 {
		t.Fatal("fleet made no escaped child")
	}
	tearDown(t, f, "escape", DefaultGrace)
	for _, p := range escaped {
		if alive(p.Identity) {
			t.Errorf("escaped child %d survived", p.PID)
		}
	}
}

// Zombies count as gone; once their parent dies they are re-parented and
// reaped.
func TestTeardownZombies(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "zombies", Runtime: fleet.Containerd, Zombies: 3},
	}})
	r := tearDown(t, f, "zombies", DefaultGrace)
	if r.totals.AlreadyGone < 3 {
		t.Errorf("already gone %d, want the 3 zombies counted", r.totals.AlreadyGone)
	}
}

// A sandbox sharing its cgroup with a bystander has no cgroup of its own:
// no cgroup.kill, and the bystander and a sibling of the root live.
func TestTeardownSharedCgroup(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{
		Sandboxes: []fleet.SandboxSpec{{Name: "cube", Runtime: fleet.Cube}},
		Bystanders: []fleet.BystanderSpec{
			{Role: "cgroup-mate", Argv: []string{"cgroup-mate", "--wait"}, CgroupOf: "cube"},
			{Role: "sibling", Argv: []string{"sibling", "--wait"}, SiblingOf: "cube"},
		},
	})
	r := tearDown(t, f, "cube", 0)
	if r.plan.CgroupDir != "" || r.has(StepCgroupKill, OK, "") {
		t.Errorf("cgroup %q shared with a bystander must not be used", r.plan.Cgroup)
	}
	for _, b := range f.Manifest().Bystanders {
		if !alive(b.Identity) {
			t.Errorf("bystander %s (%d) was killed", b.Role, b.PID)
		}
	}
}

// A pid that now belongs to another process is never signalled.
func TestTeardownPIDReuse(t *testing.T) {
	var plan *Plan
	_, b := reusedPID(t, func(a proc.Identity) {
		v := fleettest.View(t, nil)
		var err error
		if plan, err = PlanSubtree(v, a.PID, PlanOptions{}); err != nil {
			t.Fatalf("plan: %v", err)
		}
	})
	eng, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var events []Event
	tot := eng.Run(context.Background(), plan, func(ev Event) { events = append(events, ev) })
	if !alive(identity(t, b.Process.Pid)) {
		t.Fatal("the process that got the recycled pid was killed")
	}
	found := false
	for _, ev := range events {
		found = found || (ev.Step == StepPin && strings.Contains(ev.Detail, "pid reused"))
		if (ev.Step == StepTerm || ev.Step == StepKill) && ev.Status == OK {
			t.Errorf("a signal was sent: %s", ev.Text())
		}
	}
	if !found || !tot.OK() {
		t.Errorf("pid reuse not reported (found %v), totals %+v", found, tot)
	}
}

// PID 1, sandtop itself, its ancestors, kernel threads and a sandbox's
// supervisor are refused before anything is signalled.
func TestTeardownRefusals(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{{Name: "vm", Runtime: fleet.VM0}}})
	runner := f.Manifest().Sandbox("vm").Supervisor
	if runner == nil {
		t.Fatal("vm0 sandbox without a runner")
	}
	v := fleettest.View(t, model.Effective(nil, true))
	eng, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pid  int
		why  Reason
	}{
		{"pid 1", 1, ReasonInit},
		{"sandtop itself", os.Getpid(), ReasonSelf},
		{"sandtop's parent", os.Getppid(), ReasonAncestor},
		{"kthreadd", 2, ReasonKernelThread},
		{"the runner that supervises a sandbox", runner.PID, ReasonSupervisor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PlanSubtree(v, tc.pid, PlanOptions{Protected: eng.Protected()})
			var refused *RefusedError
			if !errors.As(err, &refused) || refused.Reason != tc.why {
				t.Fatalf("PlanSubtree(%d) = %v, want refused: %s", tc.pid, err, tc.why)
			}
		})
	}
	if !alive(runner.Identity) {
		t.Error("the runner was harmed")
	}
}

// `kill --pid`: a subtree inside a sandbox goes, the rest of the sandbox stays.
func TestTeardownSubtree(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{{Name: "vm", Runtime: fleet.VM0}}})
	sbm := f.Manifest().Sandbox("vm")
	var fc fleet.Process
	for _, p := range sbm.Processes {
		if p.Comm == "firecracker" {
			fc = p
		}
	}
	if fc.PID == 0 {
		t.Fatalf("no firecracker in %+v", sbm.Processes)
	}
	v := fleettest.View(t, model.Effective(nil, true))
	eng, _ := New(Options{})
	plan, err := PlanSubtree(v, fc.PID, PlanOptions{Grace: DefaultGrace, Protected: eng.Protected()})
	if err != nil {
		t.Fatal(err)
	}
	tot := eng.Run(context.Background(), plan, func(ev Event) { t.Logf("[%s] %s", ev.Status, ev.Text()) })
	if !tot.OK() || alive(fc.Identity) {
		t.Fatalf("subtree teardown: %+v; firecracker alive %v", tot, alive(fc.Identity))
	}
	if root := sbm.Root(); !alive(root.Identity) {
		t.Error("the launcher chain above the subtree was killed")
	}
}

// A teardown cancelled before it starts signals nothing, and says so.
func TestTeardownCancelled(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{{Name: "vm", Runtime: fleet.VM0}}})
	rules := model.Effective(nil, true)
	v := fleettest.View(t, rules)
	sb, err := v.Resolve(f.Manifest().Sandbox("vm").ID)
	if err != nil {
		t.Fatal(err)
	}
	eng, _ := New(Options{Rules: rules})
	plan, err := PlanSandbox(v, sb, PlanOptions{Grace: DefaultGrace, Deadline: 200 * time.Millisecond, Protected: eng.Protected()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var last Event
	tot := eng.Run(ctx, plan, func(ev Event) {
		last = ev
		if ev.Step == StepTerm || ev.Step == StepKill || ev.Step == StepStop || ev.Step == StepCgroupKill {
			t.Errorf("a cancelled teardown signalled: %s", ev.Text())
		}
	})
	if tot.OK() || last.Step != StepDone || !strings.Contains(last.Detail, "stopped by the operator before any signal") {
		t.Errorf("totals %+v, last event %s: want a failed, cancelled done", tot, last.Text())
	}
	for _, p := range f.Manifest().Sandbox("vm").Processes {
		if !alive(p.Identity) {
			t.Errorf("%d %s died though the teardown was cancelled", p.PID, p.Comm)
		}
	}
}

// cgroup.kill kills whatever is in the cgroup when it runs. A process moved
// into the target's cgroup after the plan (the operator took a minute to
// confirm) is not the target's: the engine must notice and signal the
// target's processes one by one instead.
func TestTeardownCgroupJoinedAfterPlan(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{{Name: "cube", Runtime: fleet.Cube}}})
	rules := model.Effective(nil, true)
	v := fleettest.View(t, rules)
	sb, err := v.Resolve(f.Manifest().Sandbox("cube").ID)
	if err != nil {
		t.Fatal(err)
	}
	eng, _ := New(Options{Rules: rules})
	plan, err := PlanSandbox(v, sb, PlanOptions{Grace: 0, Protected: eng.Protected()})
	if err != nil {
		t.Fatal(err)
	}
	if plan.CgroupDir == "" {
		t.Fatalf("setup: %s has no dedicated cgroup", sb.ID)
	}
	stranger := startSleep(t)
	t.Cleanup(func() { stranger.Process.Kill(); reap(stranger) })
	if err := os.WriteFile(filepath.Join(plan.CgroupDir, "cgroup.procs"), []byte(strconv.Itoa(stranger.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	var events []Event
	tot := eng.Run(context.Background(), plan, func(ev Event) { events = append(events, ev); t.Logf("[%s] %s", ev.Status, ev.Text()) })
	if !alive(identity(t, stranger.Process.Pid)) {
		t.Fatal("the process that joined the cgroup after the plan was killed")
	}
	for _, ev := range events {
		if ev.Step == StepCgroupKill && ev.Status == OK {
			t.Errorf("cgroup.kill ran on a cgroup holding a stranger: %s", ev.Text())
		}
	}
	for _, p := range f.Manifest().Sandbox("cube").Processes {
		if alive(p.Identity) {
			t.Errorf("target process %d %s survived", p.PID, p.Comm)
		}
	}
	_ = tot // the stranger keeps the cgroup populated: cleanup cannot remove it, which is right
}

// The events say only what happened: a sandbox that SIGTERM already ended
// leaves an empty cgroup, which is not "killed every process in" again,
// and a v1 freezer nobody froze is not "thawed".
func TestTeardownSaysOnlyWhatItDid(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "box", Runtime: fleet.Boxlite, Detached: true},
	}})
	r := tearDown(t, f, "box", DefaultGrace)
	if r.plan.CgroupDir == "" {
		proctest.SkipMissing(t, "the box got no dedicated cgroup here")
	}
	if !r.has(StepWait, OK, "exited after SIGTERM") {
		t.Fatal("SIGTERM should have ended the box within the grace")
	}
	if r.has(StepCgroupKill, OK, "killed every process") {
		t.Error("an empty cgroup reported as killed")
	}
	if !r.has(StepCgroupKill, Skip, "nothing left in") {
		t.Error("the forced phase does not say the cgroup was already empty")
	}
	// An empty cgroup holds nobody to judge before cgroup.kill: the only
	// scan is verify's.
	if r.scans != 1 {
		t.Errorf("the teardown scanned the host %d times; want 1 (verify)", r.scans)
	}
	if r.has(StepThaw, OK, "thawed") {
		t.Error("a freezer nobody froze reported as thawed")
	}

	f = fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "frozen-v1", Runtime: fleet.Cube, Pause: fleet.PauseFreezerV1},
	}})
	if f.Manifest().Sandbox("frozen-v1").Paused != fleet.PauseFreezerV1 {
		t.Skip("the fleet could not freeze a v1 freezer here")
	}
	r = tearDown(t, f, "frozen-v1", DefaultGrace)
	thaws := 0
	for _, ev := range r.events {
		if ev.Step == StepThaw && ev.Status == OK {
			thaws++
		}
	}
	if thaws != 1 {
		t.Errorf("the v1 freezer was frozen once and thawed once, yet %d thaws are reported", thaws)
	}
}
