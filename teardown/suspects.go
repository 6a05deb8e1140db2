package teardown

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// A process that double-forks away from a sandbox (a daemon helper
// re-parented to a subreaper, in a session of its own) leaves its ancestry
// behind but not its cgroup: it stays in the cgroup the process that
// started it ran in. When that cgroup is the sandbox's dedicated one the
// model already counts it a member. When it is not, nothing in /proc ties
// it to the sandbox for certain, and the same cgroup may hold the
// operator's own shell: such a process is a suspect. A suspect in a cgroup
// that names the sandbox is taken (killed like a member); any other is
// named in the plan and, alive at the end, in the survivors, and is
// signalled only when the operator includes it (kill --with-cgroup, or the
// confirmation's key).

// Suspect is a process outside the target's tree that may have started
// inside it.
type Suspect struct {
	proc.Identity
	PPID   int
	Comm   string
	Cgroup string
	// Evidence says why it is suspected, one phrase per fact.
	Evidence []string
	// Provable is set when its cgroup names the sandbox: then it is taken
	// without being asked for.
	Provable bool
}

// Why is the suspect's evidence in one phrase.
func (s Suspect) Why() string { return strings.Join(s.Evidence, ", ") }

// suspectScope is what suspects are judged by, fixed when the plan is
// made: verify judges a fresh scan by it after the members are gone.
type suspectScope struct {
	sb *model.Sandbox
	// cgroups are the v2 cgroups the sandbox's live members occupy.
	cgroups map[string]bool
	// rootStart is the sandbox root's start time: a process started
	// before it cannot descend from it.
	rootStart uint64
	// sessions and groups are the session and process-group IDs that
	// only the sandbox's processes hold (not the root's ancestors', nor
	// those of any process older than the root, which the sandbox merely
	// shares).
	sessions, groups map[int]bool
	// above holds the root's ancestors (pid to start time): the
	// subreapers an escaped process is re-parented to.
	above map[int]uint64
	// members are the plan's members.
	members map[proc.Identity]bool
	// memberSessions are the sessions the plan's members are in, shared
	// with others or not. A session is only ever inherited or new, so a
	// process in none of them descends from no member.
	memberSessions map[int]bool
	// unprovable is set for a process subtree: no cgroup is its.
	unprovable bool
	// planned is the latest start time in the plan's snapshot: a process
	// started after it was born during the teardown.
	planned uint64
}

func newSuspectScope(v *model.View, sb *model.Sandbox) *suspectScope {
	if sb.Root == nil || v.Snapshot == nil {
		return nil
	}
	snap := v.Snapshot
	sc := &suspectScope{sb: sb, cgroups: map[string]bool{}, rootStart: sb.Root.Start,
		sessions: map[int]bool{}, groups: map[int]bool{}, above: map[int]uint64{}, members: map[proc.Identity]bool{}, memberSessions: map[int]bool{}}
	for _, m := range sb.Members {
		sc.members[m.ID()] = true
		sc.memberSessions[m.SID] = true
		if m.Zombie() {
			continue
		}
		if m.Cgroup != "" && m.Cgroup != "/" {
			sc.cgroups[m.Cgroup] = true
		}
		sc.sessions[m.SID] = true
		sc.groups[m.PGID] = true
	}
	inherited := func(p *proc.Process) {
		delete(sc.sessions, p.SID)
		delete(sc.groups, p.PGID)
	}
	seen := map[int]bool{}
	for q := snap.Proc(sb.Root.PPID); q != nil && !seen[q.PID]; q = snap.Proc(q.PPID) {
		seen[q.PID] = true
		sc.above[q.PID] = q.Start
		inherited(q)
	}
	if self := snap.Proc(snap.Self); self != nil {
		inherited(self)
	}
	// A session or group that a process outside the sandbox held before
	// the sandbox began is not the sandbox's either: a runtime daemon's
	// (containerd starts its shims in its own session, so the helper it
	// runs there once a shim is gone would read as escaped).
	for _, p := range snap.Procs {
		if p.Start < sb.Root.Start && !sc.members[p.ID()] {
			inherited(p)
		}
	}
	delete(sc.sessions, 0)
	delete(sc.groups, 0)
	for _, p := range snap.Procs {
		sc.planned = max(sc.planned, p.Start)
	}
	return sc
}

// find lists the suspects of snap. v is a view of snap; members are
// anything the plan or a pin already holds. lost says that a member of the
// tree exited before the stop pass could pin its children (by itself, or
// from SIGTERM): a child it forked after the plan was then re-parented to
// a subreaper above the root, in the root's own session, where nothing
// but its birth during the teardown tells it from a sibling of the root
// (so it is named, never signalled).
func (sc *suspectScope) find(snap *proc.Snapshot, v *model.View, held func(proc.Identity) bool, protected map[int]bool, lost bool) []Suspect {
	if sc == nil {
		return nil
	}
	supervisors := map[int]bool{}
	if v != nil {
		for _, sb := range v.Sandboxes {
			if sb.Supervisor != nil {
				supervisors[sb.Supervisor.PID] = true
			}
		}
	}
	var out []Suspect
	for _, p := range snap.Procs {
		if p.Kernel || p.Zombie() || !sc.cgroups[p.Cgroup] || p.Start < sc.rootStart {
			continue
		}
		id := p.ID()
		if sc.members[id] || held(id) || protected[p.PID] || Refuse(snap, p, snap.Self) != nil {
			continue
		}
		if start, up := sc.above[p.PID]; up && start == p.Start || supervisors[p.PID] {
			continue // the sandbox's own ancestry, or a runner: never a suspect
		}
		if v != nil && v.SandboxOf(id) != nil {
			continue // another sandbox's, or attributed to this one
		}
		var ev []string
		if sc.sessions[p.SID] {
			ev = append(ev, fmt.Sprintf("same session as the sandbox (sid %d)", p.SID))
		} else if sc.groups[p.PGID] {
			ev = append(ev, fmt.Sprintf("same process group as the sandbox (pgid %d)", p.PGID))
		}
		// A child of the root's parent in the parent's own session
		// could be a member's re-parented child only if a member was in
		// that session too: otherwise it is the parent's.
		if parent := snap.Proc(p.PPID); p.PPID == 1 || parent != nil && sc.above[p.PPID] == parent.Start && (parent.SID != p.SID || lost && p.Start > sc.planned && sc.memberSessions[p.SID]) {
			who := fmt.Sprintf("pid %d", p.PPID)
			if parent != nil {
				who += " " + parent.Comm
			}
			switch {
			case p.PPID == 1 || parent.SID != p.SID:
				ev = append(ev, "parent gone (re-parented to "+who+", in a session of its own)")
			default:
				ev = append(ev, "child of "+who+" above the root, born during the teardown while a process of the tree exited before its children were pinned (re-parented, or a sibling of the root)")
			}
		}
		provable := !sc.unprovable && sc.sb.Names(p.Cgroup)
		if len(ev) == 0 && !provable {
			continue
		}
		ev = append([]string{"in " + p.Cgroup + " with the sandbox's processes", "started after its root"}, ev...)
		if provable {
			ev = append(ev, p.Cgroup+" is named after the sandbox")
		}
		out = append(out, Suspect{Identity: id, PPID: p.PPID, Comm: p.Comm, Cgroup: p.Cgroup, Evidence: ev, Provable: provable})
	}
	return out
}

// Included reports whether a suspect is signalled: its cgroup names the
// sandbox, or the operator asked for the cgroup's other processes.
func (p *Plan) Included(s Suspect) bool { return s.Provable || p.WithCgroup }

// takeSuspects adds the suspects the plan includes to its members, first
// (they hang off no member, so leaf-first order holds).
func (p *Plan) takeSuspects() {
	var taken []Member
	for _, s := range p.Suspects {
		if p.Included(s) {
			taken = append(taken, Member{Identity: s.Identity, PPID: s.PPID, Comm: s.Comm, Cgroup: s.Cgroup, Suspect: s.Why()})
		}
	}
	p.Members = append(taken, p.Members...)
}

// leftOut lists the suspects the plan does not signal.
func (p *Plan) leftOut() []Suspect {
	return slices.DeleteFunc(slices.Clone(p.Suspects), p.Included)
}

// includeHint says how to include a cgroup's suspects.
const includeHint = "not signalled, its cgroup is not provably the sandbox's: include it with kill --with-cgroup, or w on the confirmation"
