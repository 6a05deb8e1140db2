package model

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc"
)

// world is a host that changes between snapshots the way a scanner reports
// it: a process that did not change is the same *proc.Process in the next
// snapshot, a changed one is a fresh copy.
type world struct {
	rng       *rand.Rand
	procs     map[int]*proc.Process
	cgroups   map[string]proc.CgroupState
	freezers  map[string]proc.CgroupState
	listeners map[string]bool
	nextStart uint64
	t         int
}

var (
	worldIDs     = []string{"aaaa1111bbbb", "cccc2222dddd", "eeee3333ffff", "short", vmID}
	worldCgroups = []string{
		"/", "/system.slice/containerd.service", "/pool/7", "/boxlite/aaaa1111bbbb", "/boxlite/aaaa1111bbbb/inner",
		"/kubepods/podcccc2222dddd/ctr", "/kubepods/podcccc2222dddd/eeee3333ffff", "/box/short", "/sim/frozen",
		"/user.slice",
	}
	worldSockets = []string{"/x.sock", "/run/containerd/containerd.sock"}
)

func newWorld(seed uint64) *world {
	w := &world{
		rng:       rand.New(rand.NewPCG(seed, 7)),
		procs:     map[int]*proc.Process{},
		cgroups:   map[string]proc.CgroupState{},
		freezers:  map[string]proc.CgroupState{},
		listeners: map[string]bool{"/x.sock": true},
		nextStart: 5000,
	}
	base := snap(append(vm0Chain(1),
		pr(50, 1, "subreaper"),
		pr(200, 1, "/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id aaaa1111bbbb -address /x.sock", cgroup("/boxlite/aaaa1111bbbb")),
		pr(201, 200, "nginx", cgroup("/boxlite/aaaa1111bbbb")),
		pr(202, 201, "nginx-worker", cgroup("/boxlite/aaaa1111bbbb/inner")),
		pr(210, 50, "escaped", cgroup("/boxlite/aaaa1111bbbb")),
		pr(300, 1, "containerd-shim-runc-v2 -namespace k8s.io -id eeee3333ffff -address /run/containerd/containerd.sock", cgroup("/system.slice/containerd.service")),
		pr(301, 300, "/pause", cgroup("/kubepods/podcccc2222dddd/eeee3333ffff")),
		pr(302, 300, "app", cgroup("/kubepods/podcccc2222dddd/ctr")),
		pr(400, 1, "sim --sandbox cccc2222dddd", cgroup("/pool/7")),
		pr(401, 400, "child", cgroup("/pool/7")),
		pr(410, 1, "bystander", cgroup("/pool/7")),
		pr(500, 1, "init", cgroup("/box/short")),
		pr(600, 1, "sim --sandbox frozen-one", cgroup("/sim/frozen"), freezer("/sim/frozen")),
		pr(601, 600, "", state('Z')),
		pr(700, 1, "bash", cgroup("/user.slice")),
		pr(701, 700, "vim", cgroup("/user.slice")),
		pr(800, 2, "kworker", kernel()),
	)...).Procs
	for _, p := range base {
		w.procs[p.PID] = p
	}
	for _, c := range worldCgroups {
		w.cgroups[c] = proc.CgroupState{Exists: true, Populated: true}
	}
	w.freezers["/sim/frozen"] = proc.CgroupState{Exists: true}
	return w
}

func (w *world) snapshot() *proc.Snapshot {
	s := snap()
	s.Procs = slices.SortedFunc(maps.Values(w.procs), func(a, b *proc.Process) int { return a.PID - b.PID })
	s.Cgroups, s.Freezers, s.Listeners = w.cgroups, w.freezers, w.listeners
	return s
}

// pick returns a random process that the test may change: not PID 1, not
// kthreadd, not sandtop.
func (w *world) pick() *proc.Process {
	pids := slices.Sorted(maps.Keys(w.procs))
	for {
		p := w.procs[pids[w.rng.IntN(len(pids))]]
		if p.PID > 2 && p.PID != 900 {
			return p
		}
	}
}

// edit replaces p with a copy changed by f, as a scanner would.
func (w *world) edit(p *proc.Process, f func(*proc.Process)) {
	c := *p
	f(&c)
	w.procs[p.PID] = &c
}

func (w *world) argv() []string {
	id := worldIDs[w.rng.IntN(len(worldIDs))]
	pool := []string{
		"worker", "bash", "sleep 60", "sim --sandbox " + id, "sim --sandbox new" + fmt.Sprint(w.t),
		"firecracker --api-sock /run/vm0/sock/" + id + "/api.sock",
		"containerd-shim-runc-v2 -namespace k8s.io -id " + id + " -address " + worldSockets[w.rng.IntN(2)],
		"/usr/bin/runner start --config /etc/vm0/runner.yaml",
		// One rule, captures that vary: the first match in pid order
		// must keep deciding the sandbox's variables.
		"halfexp " + id, "halfexp " + id + " base=/srv/" + fmt.Sprint(w.rng.IntN(2)),
	}
	return strings.Fields(pool[w.rng.IntN(len(pool))])
}

func (w *world) cgroup() string { return worldCgroups[w.rng.IntN(len(worldCgroups))] }

// step changes the world a little. Most steps are what a steady host does
// (CPU ticks, stops and continues); the rest change structure.
func (w *world) step() string {
	w.t++
	p := w.pick()
	switch k := w.rng.IntN(29); {
	case k == 27, k == 28:
		// A container process starts a process that a rule recognises
		// with captures that vary, at a pid that may be lower than its
		// siblings'.
		parent := w.procs[201]
		pid := 1000 + w.rng.IntN(2000)
		if _, taken := w.procs[pid]; parent == nil || taken {
			return "nothing"
		}
		argv := "halfexp aaaa1111bbbb"
		if w.rng.IntN(2) == 0 {
			argv += " base=/srv/" + fmt.Sprint(w.rng.IntN(2))
		}
		w.procs[pid] = pr(pid, parent.PID, argv, start(w.nextStart), pgid(parent.PGID), cgroup(parent.Cgroup))
		w.nextStart++
		return "halfexp"
	case k == 26:
		// A skewed snapshot: the parent is gone, its children were read
		// before they were re-parented.
		delete(w.procs, p.PID)
		return "death, children not yet re-parented"
	case k == 22, k == 23:
		// A process forks a child that stays in its cgroup and group, as
		// a shell inside a container does.
		pid := 5000 + w.t
		c := pr(pid, p.PID, "sh -c job", start(w.nextStart), pgid(p.PGID), cgroup(p.Cgroup), freezer(p.Freezer))
		w.nextStart++
		w.procs[pid] = c
		return "fork"
	case k == 24:
		// A leaf exits and is reaped.
		for _, c := range w.procs {
			if c.PPID == p.PID {
				return "nothing"
			}
		}
		delete(w.procs, p.PID)
		return "leaf exit"
	case k == 25:
		// A leaf execs, staying in its cgroup.
		w.edit(p, func(c *proc.Process) { c.Argv = []string{"job", fmt.Sprint(w.t)}; c.Comm = "job" })
		return "exec"
	case k == 20:
		// The vm0 runner (a supervisor, in no sandbox) execs.
		if r := w.procs[100]; r != nil {
			w.edit(r, func(c *proc.Process) { c.Argv = w.argv(); c.Comm = c.Argv[0] })
		}
		return "runner exec"
	case k == 21:
		// A process outside every sandbox joins the vm0 process group.
		if _, ok := w.procs[700]; ok {
			pid := 3000 + w.t
			w.procs[pid] = pr(pid, 700, "worker", start(w.nextStart), pgid(101), cgroup("/user.slice"))
			w.nextStart++
		}
		return "join vm0 group"
	case k < 7:
		w.edit(p, func(c *proc.Process) { c.CPUTicks++ })
		return "tick"
	case k < 9:
		w.edit(p, func(c *proc.Process) {
			if c.State == 'T' {
				c.State = 'S'
			} else if c.State == 'S' {
				c.State = 'T'
			}
		})
		return "stop/cont"
	case k < 10:
		return "nothing"
	case k == 10:
		w.edit(p, func(c *proc.Process) { c.State = 'Z' })
		return "zombie"
	case k == 11, k == 12:
		pid := 1000 + w.rng.IntN(2000)
		if w.rng.IntN(4) == 0 {
			pid = p.PID // pid reuse
			delete(w.procs, pid)
		}
		if _, taken := w.procs[pid]; taken {
			return "nothing"
		}
		parent := w.pick()
		argv := w.argv()
		c := pr(pid, parent.PID, strings.Join(argv, " "), cgroup(parent.Cgroup), start(w.nextStart), pgid(parent.PGID))
		w.nextStart++
		if w.rng.IntN(3) == 0 {
			c.Cgroup = w.cgroup()
		}
		if w.rng.IntN(3) == 0 {
			c.PGID = pid
		}
		w.procs[pid] = c
		return "birth"
	case k == 13:
		delete(w.procs, p.PID)
		reaper := 1
		if _, ok := w.procs[50]; ok && w.rng.IntN(2) == 0 {
			reaper = 50
		}
		for _, c := range w.procs {
			if c.PPID == p.PID {
				w.edit(c, func(c *proc.Process) { c.PPID = reaper })
			}
		}
		return "death"
	case k == 14:
		w.edit(p, func(c *proc.Process) { c.Cgroup = w.cgroup() })
		return "cgroup move"
	case k == 15:
		c := w.cgroup()
		w.cgroups = maps.Clone(w.cgroups)
		st := w.cgroups[c]
		st.Frozen = !st.Frozen
		w.cgroups[c] = st
		return "freeze"
	case k == 16:
		w.listeners = maps.Clone(w.listeners)
		s := worldSockets[w.rng.IntN(2)]
		if w.listeners[s] {
			delete(w.listeners, s)
		} else {
			w.listeners[s] = true
		}
		return "listener"
	case k == 17:
		w.edit(p, func(c *proc.Process) {
			c.Argv = w.argv()
			c.Comm = c.Argv[0]
		})
		return "exec"
	case k == 18:
		w.edit(p, func(c *proc.Process) { c.PGID = w.pick().PGID })
		return "setpgid"
	default:
		w.edit(p, func(c *proc.Process) { c.PPID = w.pick().PID })
		return "reparent"
	}
}

// dumpView writes out everything a view says, and marks any process
// pointer that is not the snapshot's own (a reused view must never show
// last refresh's numbers).
func dumpView(v *View) string {
	var b strings.Builder
	ptr := func(p *proc.Process) string {
		if p == nil {
			return "-"
		}
		if v.Snapshot.Proc(p.PID) != p {
			return fmt.Sprintf("%d(STALE)", p.PID)
		}
		return fmt.Sprint(p.PID)
	}
	for _, sb := range v.Sandboxes {
		fmt.Fprintf(&b, "sandbox %s runtime=%s aliases=%v rule=%v by=%s vars=%v root=%d sup=%s note=%q supervised=%v cgroup=%q freezer=%q frozen=%v orphan=%v zombies=%d dead=%v paused=%v badges=%v cleanup=%v\n",
			sb.ID, sb.Runtime, sb.Aliases, sb.Rule != nil, sb.MatchedBy, sb.Vars, sb.Root.PID, ptr(sb.Supervisor), sb.SupervisorNote, sb.Supervised,
			sb.Cgroup, sb.Freezer, sb.Frozen, sb.Orphan, sb.Zombies, sb.Dead, sb.Paused, sb.Badges, sb.Cleanup)
		if v.Sandbox(sb.ID) != sb {
			fmt.Fprintf(&b, "  Sandbox(%s) is another\n", sb.ID)
		}
		for _, m := range sb.Members {
			parent := 0
			if m.Parent != nil {
				parent = m.Parent.PID
			}
			fmt.Fprintf(&b, "  %s via=%v by=%s depth=%d parent=%d children=%v orphan=%v state=%c cpu=%d\n",
				ptr(m.Process), m.Via, m.MatchedBy, m.Depth, parent, pids(m.Children), m.Escaped, m.State, m.CPUTicks)
		}
	}
	for _, p := range v.Unattributed {
		fmt.Fprintf(&b, "unattributed %s\n", ptr(p))
	}
	for _, p := range v.Snapshot.Procs {
		if sb := v.SandboxOf(p.ID()); sb != nil {
			fmt.Fprintf(&b, "of %d = %s\n", p.PID, sb.ID)
		}
	}
	return b.String()
}

// TestReuseMatchesFullBuild drives a Builder through random host changes
// and holds every view it returns equal to a full Build of the same inputs.
func TestReuseMatchesFullBuild(t *testing.T) {
	// The full Builds match on several goroutines, as at 10,000 processes.
	defer func(n int) { prematchPerWorker = n }(prematchPerWorker)
	prematchPerWorker = 8
	seeds, steps := 12, 300
	if testing.Short() {
		seeds = 4
	}
	var builds, reused, joins, exits, execs int
	for seed := range uint64(seeds) {
		w := newWorld(seed)
		b := NewBuilder(rules)
		var prev *View
		var log []string
		var older []struct {
			v    *View
			said string
		}
		for range steps {
			s := w.snapshot()
			before := b.Stats().Reused
			got := b.Build(s, prev)
			checkMemos(t, b)
			want := Build(s, rules, prev)
			if g, wnt := dumpView(got), dumpView(want); g != wnt {
				t.Fatalf("seed %d after %v (reused %v):\n--- reuse\n%s--- full build\n%s", seed, log[max(0, len(log)-5):], b.Stats().Reused > before, g, wnt)
			}
			// Views stay as they were built: the refreshes after them
			// must not reuse what they hold (their members by position).
			if len(older) == 2 {
				if o := older[0]; membership(o.v) != o.said {
					t.Fatalf("seed %d: a view two refreshes old now says\n%s\nwhere it said\n%s", seed, membership(o.v), o.said)
				}
				older = older[1:]
			}
			older = append(older, struct {
				v    *View
				said string
			}{got, membership(got)})
			prev = got
			// One to three changes between two refreshes: a child can be
			// born under a parent born since the last one.
			for range 1 + w.rng.IntN(3) {
				log = append(log, w.step())
			}
			builds++
		}
		reused += b.Stats().Reused
		joins, exits, execs = joins+b.Stats().ReusedJoins, exits+b.Stats().ReusedExits, execs+b.Stats().ReusedExecs
	}
	t.Logf("%d builds, %d reused, absorbing %d joins, %d exits and %d execs of members", builds, reused, joins, exits, execs)
	if joins == 0 || exits == 0 || execs == 0 {
		t.Error("the random host never made reuse absorb a member's birth, exit or exec")
	}
	// The check proves something only if both paths ran often. The
	// random host often puts a claimant inside another sandbox (a
	// conflict, which a full Build decides), so reuse runs less than on
	// a real host.
	if reused < builds/8 || reused > builds*9/10 {
		t.Errorf("%d of %d builds reused: the random host does not exercise both paths", reused, builds)
	}
}

// membership lists the sandbox SandboxOf gives for each process of v,
// and any Member v holds by position that is not that process's in that
// sandbox.
func membership(v *View) string {
	var b strings.Builder
	for i, p := range v.Snapshot.Procs {
		if sb := v.SandboxOf(p.ID()); sb != nil {
			fmt.Fprintf(&b, "%d:%s ", p.PID, sb.Key())
		}
		if m := v.members[i]; m != nil && (m.Process != p || v.Sandboxes[m.sb].Members[m.ord] != m) {
			fmt.Fprintf(&b, "(pid %d: member of another view) ", p.PID)
		}
	}
	return b.String()
}

// checkMemos fails the test unless b's match memos are aligned with its
// latest snapshot and each holds that snapshot's process or nothing: a
// memo on an older process would keep it alive.
func checkMemos(t *testing.T, b *Builder) {
	t.Helper()
	procs := b.last.snap.Procs
	if len(b.last.memos) != len(procs) {
		t.Fatalf("%d memos for %d processes", len(b.last.memos), len(procs))
	}
	held := 0
	for i, m := range b.last.memos {
		if m.p != nil && m.p != procs[i] {
			t.Fatalf("the memo at position %d holds pid %d (%p), not the snapshot's pid %d (%p)", i, m.p.PID, m.p, procs[i].PID, procs[i])
		}
		if m.p != nil {
			held++
		}
	}
	if held == 0 {
		t.Fatal("no memo held: nothing was remembered")
	}
	for _, m := range b.last.spareMemos {
		if m != (matchMemo{}) {
			t.Fatal("a spare memo array keeps processes")
		}
	}
}

// TestReuseSharesUnchangedSandboxes checks what reuse is for: a refresh
// that changed nothing shares every sandbox, and one that ticked one
// member's CPU copies that sandbox alone.
func TestReuseSharesUnchangedSandboxes(t *testing.T) {
	w := newWorld(1)
	b := NewBuilder(rules)
	v1 := b.Build(w.snapshot(), nil)
	v2 := b.Build(w.snapshot(), v1)
	if b.Stats().Reused != 1 {
		t.Fatalf("reused %d builds, want 1", b.Stats().Reused)
	}
	for i := range v1.Sandboxes {
		if v1.Sandboxes[i] != v2.Sandboxes[i] {
			t.Errorf("sandbox %s rebuilt though nothing changed", v1.Sandboxes[i].ID)
		}
	}
	w.edit(w.procs[202], func(c *proc.Process) { c.CPUTicks += 100 })
	v3 := b.Build(w.snapshot(), v2)
	if b.Stats().Reused != 2 {
		t.Fatalf("reused %d builds, want 2", b.Stats().Reused)
	}
	for i, sb := range v3.Sandboxes {
		if shared := sb == v2.Sandboxes[i]; shared == (sb.ID == "aaaa1111bbbb") {
			t.Errorf("sandbox %s shared=%v", sb.ID, shared)
		}
	}
	if m := members(v3.Sandbox("aaaa1111bbbb"))[202]; m.CPUTicks != 100 || m.Parent.PID != 201 {
		t.Errorf("worker cpu %d parent %d, want 100 and 201", m.CPUTicks, m.Parent.PID)
	}
	if m := members(v2.Sandbox("aaaa1111bbbb"))[202]; m.CPUTicks != 0 {
		t.Error("the previous view was modified")
	}
	// Short-lived processes outside every sandbox come and go: each refresh
	// is a reuse, and the Builder remembers nothing of them.
	memos := b.remembered()
	for i := range 100 {
		pid := 4000 + i
		w.procs[pid] = pr(pid, 700, "cron-job", start(w.nextStart), cgroup("/user.slice"))
		w.nextStart++
		delete(w.procs, pid-1)
		v3 = b.Build(w.snapshot(), v3)
	}
	if b.Stats().Reused != 102 || b.remembered() != memos {
		t.Errorf("after 100 unrelated births: %d builds reused (want 102), %d match memos (want %d)", b.Stats().Reused, b.remembered(), memos)
	}
	// A rule match among the newborn is a full Build.
	w.procs[3000] = pr(3000, 1, "sim --sandbox brand-new")
	v4 := b.Build(w.snapshot(), v3)
	if b.Stats().Reused != 102 || v4.Sandbox("brand-new") == nil {
		t.Errorf("reused %d, brand-new sandbox %v", b.Stats().Reused, v4.Sandbox("brand-new"))
	}
}

// TestReuseDedicationSeesOnlyEarlyMembers: dedication (rule 3) looks at
// the cgroups of members placed by rules 1 and 2 only. A newborn a rule
// recognises, in a cgroup where only a sticky member lives, makes that
// cgroup a candidate: only a full Build can say what follows (here, the
// cgroup is dedicated and the sticky member joins by it).
func TestReuseDedicationSeesOnlyEarlyMembers(t *testing.T) {
	const id = "stickybox01"
	s1 := snap(
		pr(300, 1, "sim --sandbox "+id, cgroup("/pool/7")),
		pr(301, 300, "worker", cgroup("/"+id+"/x")),
		pr(310, 1, "bystander", cgroup("/pool/7")),
	)
	b := NewBuilder(rules)
	v1 := b.Build(s1, nil)
	s2 := snap(
		pr(300, 1, "sim --sandbox "+id, cgroup("/pool/7")),
		pr(301, 1, "worker", cgroup("/"+id+"/x")), // its parent's pid was reused
		pr(310, 1, "bystander", cgroup("/pool/7")),
	)
	v2 := b.Build(s2, v1)
	if m := members(one(t, v2, id))[301]; m == nil || m.Via != ViaSticky {
		t.Fatalf("worker %+v, want a sticky member", m)
	}
	s3 := snap(
		s2.Proc(300), s2.Proc(301), s2.Proc(310),
		pr(320, 301, "sim --sandbox "+id, cgroup("/"+id+"/x")),
	)
	got := b.Build(s3, v2)
	if g, w := dumpView(got), dumpView(Build(s3, rules, v2)); g != w {
		t.Fatalf("builder:\n%s\nfull build:\n%s", g, w)
	}
	if sb := one(t, got, id); sb.Cgroup != "/"+id+"/x" || members(sb)[301].Via != ViaCgroup {
		t.Errorf("cgroup %q, worker via %v: want the worker's cgroup dedicated, and the worker in by it", sb.Cgroup, members(sb)[301].Via)
	}
}

// TestReuseNewbornUnderNewborn: a newborn's place is decided by its
// nearest placed ancestor, which can itself be new: a process a rule
// recognises, born since the last refresh under another sandbox's member,
// while the sandbox it claims lives elsewhere, is an impostor in the
// sandbox whose tree it is in (rule 1c), and so are its children.
func TestReuseNewbornUnderNewborn(t *testing.T) {
	const a, b = "sandbox-a1", "sandbox-b1"
	s1 := snap(
		pr(300, 1, "sim --sandbox "+a, cgroup("/a")),
		pr(301, 1, "sim --sandbox "+b, cgroup("/b")),
		pr(302, 1, "sim --sandbox "+b, cgroup("/a")),
	)
	bld := NewBuilder(rules)
	v1 := bld.Build(s1, nil)
	s2 := snap(
		s1.Proc(300), s1.Proc(301), s1.Proc(302),
		pr(710, 300, "sim --sandbox "+b, cgroup("/a")),
		pr(711, 710, "job", cgroup("/a")),
	)
	got := bld.Build(s2, v1)
	if g, w := dumpView(got), dumpView(Build(s2, rules, v1)); g != w {
		t.Fatalf("builder:\n%s\nfull build:\n%s", g, w)
	}
	if sb := got.SandboxOf(s2.Proc(711).ID()); sb == nil || sb.ID != a || len(sb.Conflicts) != 1 {
		t.Errorf("the newborn's child is in %v, want %s with the newborn's claim as a conflict", sb, a)
	}
}
