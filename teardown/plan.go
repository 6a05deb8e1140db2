package teardown

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// DefaultGrace is how long the graceful phase waits after SIGTERM, as the
// Cloudflare sandbox SDK does before escalating to SIGKILL.
const DefaultGrace = 5 * time.Second

// DefaultDeadline bounds the verify loop: how long the engine keeps killing
// newcomers before it reports them as survivors.
const DefaultDeadline = 5 * time.Second

// Plan is what a teardown will do, made from one model view. It is what the
// operator confirms, so it must say everything that will be touched.
type Plan struct {
	// Target names the target for people: the sandbox's Name
	// ("namespace/id", or the ID), or "pid N" for a process subtree.
	Target string
	// Key is the sandbox's Key (runtime:namespace/id), "" for a subtree:
	// what the verify scans look the sandbox up by.
	Key     string
	Runtime string
	// Sandbox is the target sandbox; nil for a subtree.
	Sandbox *model.Sandbox
	RootPID int
	// Members are the target's processes, leaf first: every process comes
	// before its parent, so no parent reaps or respawns a child we have
	// yet to signal.
	Members []Member
	// Cgroup is the dedicated cgroup v2 path, "" when none; CgroupDir is
	// where it lives in the cgroupfs.
	Cgroup, CgroupDir string
	// Freezer is the dedicated v1 freezer path, "" when none.
	Freezer, FreezerDir string
	// Frozen is true when the target's cgroup is frozen (paused);
	// FrozenV2 and FrozenV1 say which of its dedicated cgroups is.
	Frozen, FrozenV2, FrozenV1 bool
	// Supervised is true when a live supervisor owns the sandbox; then the
	// supervisor cleans up and the engine only kills.
	Supervised     bool
	SupervisorNote string
	// Cleanup lists the paths removed after the kill (unsupervised only).
	Cleanup []string
	// CleanupRefused says why a rule's cleanup path is not among them
	// (model.Sandbox.CleanupRefused).
	CleanupRefused []string
	// Reconcile is the runtime's own command that makes it notice the
	// kill (from the sandbox's rule, never from a process's argv): the
	// done step prints it, and RunReconcile runs it.
	Reconcile []string
	// ReconcileAs is the uid Reconcile runs as, nil for sandtop's own
	// (see reconcileOwner).
	ReconcileAs *int
	// Inspect is the runtime's own command that prints its view of the
	// sandbox: RunReconcile asks it afterwards and quotes the answer.
	Inspect []string
	// Leftovers is what a sandbox with no process left still holds: the
	// plan of such a sandbox signals nothing and removes these (the ones
	// with a Keep reason are reported, not removed).
	Leftovers []model.Leftover
	// Grace is the graceful phase's wait; 0 means SIGKILL at once.
	Grace time.Duration
	// Deadline bounds the verify loop.
	Deadline time.Duration
	// View is the view the plan was made from; verify builds its fresh
	// view on top of it so that members keep their attribution while they
	// live (sticky attribution).
	View *model.View
	// Suspects are processes outside the tree, in the cgroups its members
	// occupy, that may have started inside it (see Suspect). The included
	// ones are among Members too.
	Suspects []Suspect
	// WithCgroup includes every suspect, not only those in a cgroup that
	// names the sandbox.
	WithCgroup bool
	// scope is what verify judges a fresh scan's suspects by.
	scope *suspectScope
}

// Member is one process of the plan, named by identity.
type Member struct {
	proc.Identity
	PPID   int
	Comm   string
	Depth  int
	Zombie bool
	// Cgroup is the member's cgroup v2 path when planned.
	Cgroup string
	// Suspect is the evidence that put a process outside the tree among
	// the members (see Suspect); "" for the tree's own.
	Suspect string
	// Resists says why the process will not act on the signal the
	// graceful phase sends it (SIGTERM, or its Halt), as the kernel
	// reported it when planned: it ignores or blocks it, or as pid 1 of
	// its namespace never gets it ("" when it acts on it, or when the
	// plan read no status; see noteResisters).
	Resists string
	// ExitsAfterWorkload says that the sandbox's rule knows the process
	// as a monitor that exits by itself once the workload has, after
	// recording the exit for its runtime (model.Rule.ExitsAfterWorkload).
	ExitsAfterWorkload bool
	// Halt is the signal the graceful phase sends in place of SIGTERM:
	// the runtime's halt signal, for the init of the sandbox's pid
	// namespace (model.Sandbox.HaltSignal); 0 for SIGTERM.
	Halt unix.Signal
}

func member(m *model.Member) Member {
	return Member{Identity: m.ID(), PPID: m.PPID, Comm: m.Comm, Depth: m.Depth, Zombie: m.Zombie(), Cgroup: m.Cgroup}
}

// inCgroup reports whether a member was planned inside the dedicated cgroup.
func (p *Plan) inCgroup(m Member) bool {
	return p.Cgroup != "" && (m.Cgroup == p.Cgroup || strings.HasPrefix(m.Cgroup, p.Cgroup+"/"))
}

// PlanOptions tune a plan.
type PlanOptions struct {
	Grace    time.Duration
	Deadline time.Duration
	// Protected holds pids that must never be signalled besides PID 1 and
	// kernel threads: sandtop itself and its ancestors (SelfAndAncestors).
	Protected map[int]bool
	// ProcRoot is where a subtree's processes' sockets are read, to find a
	// supervisor known by the socket it listens on ("/proc" when empty).
	ProcRoot string
	// WithCgroup includes every suspect in the plan (see Plan.WithCgroup).
	WithCgroup bool
}

// PlanSandbox plans the teardown of one sandbox of v.
func PlanSandbox(v *model.View, sb *model.Sandbox, o PlanOptions) (*Plan, error) {
	if err := refuseAll(v, sb.Members, o.Protected); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", model.Printable(sb.ID), err)
	}
	p := &Plan{
		Target:         sb.Name(),
		Key:            sb.Key(),
		Runtime:        sb.Runtime,
		Sandbox:        sb,
		Cgroup:         sb.Cgroup,
		Freezer:        sb.Freezer,
		Frozen:         sb.Frozen,
		Supervised:     sb.Supervised,
		SupervisorNote: sb.SupervisorNote,
		View:           v,
	}
	p.setOptions(o)
	if sb.Root != nil {
		p.RootPID = sb.Root.PID
	}
	if len(sb.Members) == 0 {
		if len(sb.Leftovers) == 0 {
			return nil, fmt.Errorf("sandbox %s: no process and nothing left over", model.Printable(sb.ID))
		}
		p.Leftovers = slices.Clone(sb.Leftovers)
		return p, nil
	}
	if sb.Cgroup != "" {
		p.CgroupDir = v.Snapshot.Mounts.V2Dir(sb.Cgroup)
		p.FrozenV2 = v.Snapshot.Cgroups[sb.Cgroup].Frozen
	}
	if sb.Freezer != "" {
		p.FreezerDir = v.Snapshot.Mounts.FreezerDir(sb.Freezer)
		p.FrozenV1 = v.Snapshot.Freezers[sb.Freezer].Frozen
	}
	if !sb.Supervised {
		p.Cleanup = slices.Clone(sb.Cleanup)
		p.CleanupRefused = slices.Clone(sb.CleanupRefused)
	}
	p.Reconcile = slices.Clone(sb.Reconcile)
	p.ReconcileAs = reconcileOwner(sb, cmp.Or(o.ProcRoot, "/proc"))
	p.Inspect = slices.Clone(sb.Inspect)
	// Pre-order reversed puts every process after all of its descendants.
	for i := len(sb.Members) - 1; i >= 0; i-- {
		m := member(sb.Members[i])
		m.ExitsAfterWorkload = sb.ExitsAfterWorkload(sb.Members[i])
		m.Halt = sb.HaltSignal(sb.Members[i])
		p.Members = append(p.Members, m)
	}
	p.scope = newSuspectScope(v, sb)
	p.Suspects = p.scope.find(v.Snapshot, v, func(proc.Identity) bool { return false }, o.Protected, false)
	p.WithCgroup = o.WithCgroup
	p.takeSuspects()
	if o.ProcRoot != "" {
		p.noteResisters(o.ProcRoot)
	}
	return p, nil
}

// SetWithCgroup includes every suspect (on) or only the provable ones, as
// the confirmation's key toggles it.
func (p *Plan) SetWithCgroup(on bool) {
	p.Members = slices.DeleteFunc(p.Members, func(m Member) bool { return m.Suspect != "" })
	p.WithCgroup = on
	p.takeSuspects()
}

// PlanSubtree plans the teardown of the process tree rooted at pid, for
// trees no rule knows. It never uses a cgroup: a subtree owns none.
func PlanSubtree(v *model.View, pid int, o PlanOptions) (*Plan, error) {
	snap := v.Snapshot
	root := snap.Proc(pid)
	if root == nil {
		return nil, fmt.Errorf("pid %d: no such process", pid)
	}
	children := map[int][]*proc.Process{}
	for _, p := range snap.Procs {
		children[p.PPID] = append(children[p.PPID], p)
	}
	// Pre-order, without recursion (a chain can be as deep as the host has
	// pids), each process once: a snapshot can hold a parent cycle (see
	// model's breakCycles).
	var pre []*model.Member
	seen := map[int]bool{}
	stack := []*model.Member{{Process: root}}
	for len(stack) > 0 {
		m := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[m.PID] {
			continue
		}
		seen[m.PID] = true
		pre = append(pre, m)
		kids := children[m.PID]
		for i := len(kids) - 1; i >= 0; i-- {
			if !seen[kids[i].PID] {
				stack = append(stack, &model.Member{Process: kids[i], Depth: m.Depth + 1})
			}
		}
	}
	if err := refuseAll(v, pre, o.Protected); err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	if err := refuseDependedOn(v, pre, cmp.Or(o.ProcRoot, "/proc")); err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	p := &Plan{
		Target:         fmt.Sprintf("pid %d", pid),
		Runtime:        "-",
		RootPID:        pid,
		SupervisorNote: "a process subtree has no supervisor",
		View:           v,
	}
	if sb := v.SandboxOf(root.ID()); sb != nil {
		p.Runtime = sb.Runtime
		p.SupervisorNote = "inside sandbox " + sb.ID + "; its supervisor is not asked to clean up"
	}
	p.setOptions(o)
	for i := len(pre) - 1; i >= 0; i-- {
		p.Members = append(p.Members, member(pre[i]))
	}
	// A subtree owns no cgroup, so nothing outside it is ever taken; but
	// verify still looks for what escaped it during the teardown (a child
	// re-parented when its parent exited), so as to name it.
	if p.scope = newSuspectScope(v, &model.Sandbox{Root: pre[0], Members: pre}); p.scope != nil {
		p.scope.unprovable = true
	}
	if o.ProcRoot != "" {
		p.noteResisters(o.ProcRoot)
	}
	return p, nil
}

func (p *Plan) setOptions(o PlanOptions) {
	p.Grace, p.Deadline = o.Grace, o.Deadline
	if p.Grace < 0 {
		p.Grace = 0
	}
	if p.Deadline <= 0 {
		p.Deadline = DefaultDeadline
	}
}

// refuseAll rejects a target that holds a process sandtop must never
// signal, or the supervisor of any sandbox: the operator should kill the
// sandbox, not the runner that owns it.
func refuseAll(v *model.View, ms []*model.Member, protected map[int]bool) error {
	supervised := map[int]bool{}
	for _, sb := range v.Sandboxes {
		if sb.Supervisor != nil {
			supervised[sb.Supervisor.PID] = true
		}
	}
	for _, m := range ms {
		if err := Refuse(v.Snapshot, m.Process, v.Snapshot.Self); err != nil {
			return err
		}
		if protected[m.PID] {
			return &RefusedError{PID: m.PID, Comm: m.Comm, Reason: ReasonAncestor}
		}
		if supervised[m.PID] {
			return refuseSupervisor(v, m.Process, v.DependOn(m.Process, nil), "")
		}
	}
	return nil
}

// refuseDependedOn rejects a process subtree that holds a process live
// sandboxes depend on beyond what refuseAll sees: a supervisor known by
// the socket it listens on (containerd, behind its shims' -address; the
// shims are PPID 1, so no ancestry leads there) and any runtime daemon,
// whether or not a sandbox of it runs now. A sandbox's own members are
// not asked: a container that runs a containerd of its own is torn down
// as a sandbox, whole.
func refuseDependedOn(v *model.View, ms []*model.Member, procRoot string) error {
	sockets := false
	for _, sb := range v.Sandboxes {
		sockets = sockets || sb.SupervisorSocket() != ""
	}
	// Unreadable descriptors (another user's process, without root)
	// leave the daemon test; such a process cannot be signalled without
	// root either.
	listening := func(m *model.Member) []string {
		if !sockets {
			return nil
		}
		l, _ := proc.ListeningUnixSockets(procRoot, m.PID)
		return l
	}
	for _, m := range ms {
		d, daemon := model.DaemonOf(m.Process)
		var listens []string
		if daemon {
			// A daemon's sandboxes may hang on a socket of a process it
			// runs (dockerd's own containerd): it is asked with every
			// socket of the subtree, read only for a daemon.
			for _, o := range ms {
				listens = append(listens, listening(o)...)
			}
		} else {
			listens = listening(m)
		}
		deps := v.DependOn(m.Process, listens)
		if len(deps) == 0 && !daemon {
			continue
		}
		what := ""
		if daemon {
			what = "runtime daemon " + d.Name
		}
		return refuseSupervisor(v, m.Process, deps, what)
	}
	return nil
}

// maxDependents bounds the sandboxes a refusal names.
const maxDependents = 5

// refuseSupervisor is the refusal of p, which the sandboxes deps depend on
// (what is "" for a supervisor that is no runtime daemon), naming them.
func refuseSupervisor(v *model.View, p *proc.Process, deps []*model.Sandbox, what string) error {
	names := make([]string, 0, maxDependents)
	for _, sb := range deps[:min(len(deps), maxDependents)] {
		names = append(names, v.FullName(sb))
	}
	if n := len(deps) - maxDependents; n > 0 {
		names = append(names, fmt.Sprintf("and %d more", n))
	}
	var detail string
	switch {
	case what == "" && len(deps) == 1:
		detail = "supervisor of sandbox " + names[0] + ": kill the sandbox, not its supervisor"
	case what == "":
		detail = fmt.Sprintf("supervisor of %d sandboxes (%s): kill the sandboxes, not their supervisor", len(deps), strings.Join(names, ", "))
	case len(deps) == 0:
		detail = what + ", which sandboxes depend on (none of them runs now): stop it through its service manager, not sandtop"
	case len(deps) == 1:
		detail = what + ", which sandbox " + names[0] + " depends on: kill the sandbox, not the daemon"
	default:
		detail = fmt.Sprintf("%s, which %d sandboxes depend on (%s): kill the sandboxes, not the daemon", what, len(deps), strings.Join(names, ", "))
	}
	return &RefusedError{PID: p.PID, Comm: p.Comm, Reason: ReasonSupervisor, Detail: detail}
}

// Strategy describes how the processes will be stopped.
func (p *Plan) Strategy() string {
	if p.LeftoverOnly() {
		return "no signal: no process is left"
	}
	if p.Grace == 0 {
		return "immediate SIGKILL"
	}
	term := "SIGTERM"
	for _, m := range p.Members {
		if m.Halt != 0 {
			term += fmt.Sprintf(" (pid %d, its init: %s, %s's halt signal)", m.PID, model.SignalName(m.Halt), p.Runtime)
		}
	}
	return fmt.Sprintf("graceful: %s, %s grace, then SIGKILL", term, p.Grace)
}

// LeftoverOnly reports whether the plan is of a sandbox with no process
// left: it signals nothing and removes what the sandbox left behind.
func (p *Plan) LeftoverOnly() bool { return len(p.Members) == 0 && len(p.Leftovers) > 0 }

// Steps lists, in order, the steps the engine will run for this plan.
func (p *Plan) Steps() []Step {
	if p.LeftoverOnly() {
		return []Step{StepVerify, StepCleanup, StepDone}
	}
	steps := []Step{StepPin}
	if p.Grace > 0 {
		if p.Frozen {
			steps = append(steps, StepThaw)
		}
		steps = append(steps, StepTerm, StepWait)
	}
	switch {
	case p.CgroupDir != "" && p.FreezerDir != "":
		steps = append(steps, StepCgroupKill, StepThaw)
	case p.CgroupDir != "":
		steps = append(steps, StepCgroupKill)
	case p.FreezerDir != "":
		steps = append(steps, StepFreeze, StepKill, StepThaw)
	default:
		steps = append(steps, StepStop, StepKill)
	}
	return append(steps, StepVerify, StepCleanup, StepDone)
}
