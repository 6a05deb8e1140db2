package model

import (
	"maps"
	"slices"
	"strings"

	"github.com/sandtop/sandtop/proc"
)

type newKind int

const (
	undecidable newKind = iota // only a full Build can tell
	outside                    // in no sandbox, and changes none
	joins                      // joins a sandbox as a leaf
)

// classify decides what each difference compare found does to the
// attribution, recording the members that changed (change), joined (joins)
// or left (gone) and the sandboxes to judge again (mark). It reports false
// when a difference needs a full Build.
func (r *incremental) classify(d differences) bool {
	l, olds, news := r.l, r.l.snap.Procs, r.snap.Procs
	for _, t := range d.ticked {
		r.change(l.members[t.j], news[t.i])
	}
	for _, i := range d.born {
		switch kind, jn := r.classifyNew(news[i]); kind {
		case outside:
		case joins:
			jn.pos, jn.p = i, news[i]
			r.joins = append(r.joins, jn)
			r.mark(jn.sb)
		default:
			return false
		}
	}
	for _, j := range d.gone {
		if m := l.members[j]; m != nil {
			if !r.removable(m) {
				return false
			}
			r.gone = append(r.gone, m)
			r.mark(m.sb)
		} else if l.relevantOld(r.snap, olds[j]) {
			return false
		}
	}
	for _, t := range d.reshaped {
		n, o, m := news[t.i], olds[t.j], l.members[t.j]
		switch {
		case m != nil && r.reExec(m, n, o):
			r.change(m, n)
			r.execs++
		case m != nil || l.relevantOld(r.snap, o):
			return false
		default:
			if kind, _ := r.classifyNew(n); kind != outside {
				return false
			}
		}
	}
	return r.membersAgree() && !r.touchesConflict()
}

func (r *incremental) mark(sb int32) {
	if r.dirty == nil {
		r.dirty = make([]bool, len(r.prev.Sandboxes))
	}
	r.dirty[sb] = true
}

// touchesConflict reports whether a member born, gone or changed is in a
// sandbox with a conflict: whether a claim is contradicted (rule 1c)
// depends on every other claimant of it, which only a full Build weighs.
func (r *incremental) touchesConflict() bool {
	for i, d := range r.dirty {
		if d && len(r.prev.Sandboxes[i].Conflicts) > 0 {
			return true
		}
	}
	return false
}

func (r *incremental) change(m *Member, p *proc.Process) {
	if r.changed == nil {
		r.changed = map[*Member]*proc.Process{}
	}
	r.changed[m] = p
	r.mark(m.sb)
}

// now returns m's process in the new snapshot (m must not be gone).
func (r *incremental) now(m *Member) *proc.Process {
	if p := r.changed[m]; p != nil {
		return p
	}
	return m.Process
}

// classifyNew decides what a process that is new, or changed, does to the
// attribution: nothing (outside), joins a sandbox as a leaf that changes
// nothing else about it (joins), or something only a full Build can work
// out.
func (r *incremental) classifyNew(n *proc.Process) (newKind, join) {
	l, snap := r.l, r.snap
	if l.treatedSpecially(snap, n.PID) {
		return undecidable, join{}
	}
	if n.Kernel {
		return outside, join{}
	}
	if m, ok := r.rules.Match(n); ok {
		return r.classifyMatched(n, m)
	}
	if id, ok := l.groups[n.PGID]; ok {
		// Rule 1b: the group's sandbox, unless it was folded into
		// another since.
		sb := l.view.byKey(id)
		if sb == nil || n.Zombie() {
			return undecidable, join{}
		}
		return joins, join{sb: sb.idx, via: ViaGroup}
	}
	// The nearest ancestor that was there last time decides (newborn
	// ancestors are walked through): a member makes n join its sandbox,
	// anything else leaves n outside, as it left that ancestor.
	for q, steps := snap.Proc(n.PPID), 0; q != nil && steps <= len(snap.Procs); q, steps = snap.Proc(q.PPID), steps+1 {
		if q.Kernel || q.PID <= 1 || q.PID == snap.Self {
			break // the ancestor walk of rule 2 stops there too
		}
		if old := l.snap.Proc(q.PID); old == nil || old.Start != q.Start {
			// Born since: look further up, unless a rule or a process
			// group places it, which would place n with it.
			if _, ok := r.rules.Match(q); ok {
				return undecidable, join{}
			}
			if _, ok := l.groups[q.PGID]; ok {
				return undecidable, join{}
			}
			continue
		}
		sb := l.view.SandboxOf(q.ID())
		if sb == nil {
			break
		}
		if n.Zombie() || !anchoredByRule(sb, q.PID) {
			return undecidable, join{}
		}
		return joins, join{sb: sb.idx, via: ViaAncestor}
	}
	if l.inAskedCgroup(n) {
		return undecidable, join{}
	}
	return outside, join{}
}

// classifyMatched decides for a process a rule recognised: it joins the
// sandbox of that ID when the sandbox is there and the match cannot change
// what the sandbox says (checked further in membersAgree), else only a
// full Build can tell.
func (r *incremental) classifyMatched(n *proc.Process, m Match) (newKind, join) {
	sb := r.l.view.byKey(keyOf(m))
	if sb == nil || n.Zombie() || m.Rule.ProcessGroup || r.hasSocketFlag(n) {
		return undecidable, join{}
	}
	// Under another sandbox of the same ID, n folds its own into that one
	// (see build.mergeNested); under a parent born since, that may be so.
	if q := r.snap.Proc(n.PPID); q != nil {
		if old := r.l.snap.Proc(q.PID); old == nil || old.Start != q.Start {
			return undecidable, join{}
		}
		if o := r.l.view.SandboxOf(q.ID()); o != nil && o != sb && o.ID == sb.ID {
			return undecidable, join{}
		}
	}
	if r.mayContradict(n, sb) {
		return undecidable, join{}
	}
	if m.Rule.NestedPIDNamespace && m.Rule.onlyCgroup() {
		// Weak cgroup evidence yields to an ancestor of another runtime
		// (see build.underOtherRuntime): only a full Build decides that.
		for q, steps := r.snap.Proc(n.PPID), 0; q != nil && steps < maxSupervisorDepth; q, steps = r.snap.Proc(q.PPID), steps+1 {
			if o := r.l.view.SandboxOf(q.ID()); o != nil && o != sb {
				return undecidable, join{}
			}
		}
	}
	return joins, join{sb: sb.idx, via: ViaRule, by: m.By, match: m}
}

// mayContradict reports whether a claim of sb (argv, exe, comm, cwd)
// might be contradicted by where n lives (see build.resolveClaims): an
// ancestor in another sandbox, a cgroup where a rule found another
// sandbox, or a sandbox that has a conflict already. Only a full Build decides those.
func (r *incremental) mayContradict(n *proc.Process, sb *Sandbox) bool {
	if len(sb.Conflicts) > 0 {
		return true
	}
	for q, steps := r.snap.Proc(n.PPID), 0; q != nil && steps <= len(r.snap.Procs); q, steps = r.snap.Proc(q.PPID), steps+1 {
		if q.Kernel || q.PID <= 1 || q.PID == r.snap.Self {
			break
		}
		if o := r.l.view.SandboxOf(q.ID()); o != nil && o != sb {
			return true
		}
	}
	for _, o := range r.l.view.Sandboxes {
		if o != sb && slices.ContainsFunc(o.Members, func(m *Member) bool { return m.MatchedBy == ByCgroup && m.Cgroup == n.Cgroup }) {
			return true
		}
	}
	return false
}

// hasSocketFlag reports whether p's argv names a supervisor socket of any
// rule: the first matched member to name one decides the sandbox's
// supervisor.
func (r *incremental) hasSocketFlag(p *proc.Process) bool {
	for _, rule := range r.rules {
		if f := rule.Supervisor.SocketFlag; f != "" {
			if _, ok := FlagValue(p.Argv, f); ok {
				return true
			}
		}
	}
	return false
}

// matchOf returns the match of a member a rule recognised.
func (r *incremental) matchOf(p *proc.Process) (Match, bool) {
	if j := positionOf(r.l.snap.Procs, p.ID()); j >= 0 && r.l.memos != nil {
		if m := r.l.memos[j]; m.p != nil && m.holds(p) {
			return m.result()
		}
	}
	return r.rules.Match(p)
}

// sibling reports whether p, which a rule recognised (match m) and which
// joins sb or leaves it (gone holds every member that leaves), changes
// nothing Build takes from the matches of sb's members in pid order: the
// match that made the sandbox, the first to capture each variable, and the
// first of each rule, which orders the sandbox's rules (its Rule and
// MatchedBy, its cleanup paths, its supervisor). An older member of sb's
// own ID, matched by the same rule, that stays, and older ones capturing
// all of m's variables, make sure of that.
func (r *incremental) sibling(sb *Sandbox, p *proc.Process, m Match, gone map[*Member]bool) bool {
	if !slices.Contains(sb.rules, m.Rule) {
		return false
	}
	first := false
	need := maps.Clone(m.Vars)
	for _, x := range sb.Members {
		if x.Via != ViaRule || x.PID >= p.PID || gone[x] {
			continue
		}
		xm, ok := r.matchOf(r.now(x))
		if !ok || r.l.view.byKey(keyOf(xm)) != sb {
			continue
		}
		if xm.Rule == m.Rule {
			first = true
		}
		for k := range xm.Vars {
			delete(need, k)
		}
	}
	return first && len(need) == 0
}

// anchoredByRule reports whether the member pid of sb is anchored (see
// anchored): then a newborn below it joins in rule 2, as it did. Below a
// member placed by its cgroup or by stickiness, a full Build joins it
// later, where rule 3 could claim it first.
func anchoredByRule(sb *Sandbox, pid int) bool {
	i := slices.IndexFunc(sb.Members, func(m *Member) bool { return m.PID == pid })
	return i >= 0 && anchored(sb.Members[i])
}

// anchored reports whether m was placed before rule 3 ran: by a rule, by
// its process group, or under a chain of parents that ends at one of
// those. Dedication (rule 3) looks at those members' cgroups only.
func anchored(m *Member) bool {
	for m.Via == ViaAncestor && m.Parent != nil {
		m = m.Parent
	}
	return m.Via == ViaRule || m.Via == ViaGroup
}

// removable reports whether the exit of member m can change nothing but
// its own sandbox's member list: a leaf (no one's parent, not the root)
// that joined through its parent or its process group, or one a rule
// recognised whose match others carry on (checked in membersAgree).
func (r *incremental) removable(m *Member) bool {
	if _, walked := r.l.supWalk[m.PID]; walked || len(m.Children) > 0 || m.PID == r.prev.Sandboxes[m.sb].Root.PID {
		return false
	}
	switch m.Via {
	case ViaAncestor:
		return m.Parent != nil
	case ViaGroup:
		return true
	case ViaRule:
		match, ok := r.matchOf(m.Process)
		return ok && r.prev.byKey(keyOf(match)) == r.prev.Sandboxes[m.sb] && !match.Rule.ProcessGroup && !r.hasSocketFlag(m.Process)
	}
	return false
}

// reExec reports whether member m's process, in old and new versions o
// and n, only exec'd into something no rule matches: it stays where its
// parent put it.
func (r *incremental) reExec(m *Member, n, o *proc.Process) bool {
	if _, walked := r.l.supWalk[m.PID]; walked || m.Via != ViaAncestor {
		return false
	}
	if !samePlace(n, o) {
		return false
	}
	_, ok := r.rules.Match(n)
	return !ok
}

// membersAgree checks the joins and exits against the cgroups their
// sandboxes are judged by. A cgroup's dedication depends on the set of
// cgroups the live members are in, so a newborn must be in one a
// surviving live member is in already, and a live member that exited must
// leave one behind (Build ignores zombies there). The merges depend on the
// sandbox IDs the members' cgroups name, so neither may name one.
func (r *incremental) membersAgree() bool {
	if len(r.joins) == 0 && len(r.gone) == 0 {
		return true
	}
	// A newborn at a pid that was another process's can find children
	// there that were not born with it (their parent was the old owner of
	// the pid): they would join too. A member that exited can leave a
	// child that still names it (read before it was re-parented, or a
	// parent cycle that the tree cut): its attribution would change.
	joined := make(map[int]bool, len(r.joins))
	for _, jn := range r.joins {
		joined[jn.p.PID] = true
	}
	exited := make(map[int]bool, len(r.gone))
	for _, m := range r.gone {
		exited[m.PID] = true
	}
	for _, p := range r.snap.Procs {
		if (joined[p.PPID] && !joined[p.PID]) || exited[p.PPID] {
			return false
		}
	}
	r.regrow = make([]bool, len(r.prev.Sandboxes))
	gone := map[*Member]bool{}
	for _, m := range r.gone {
		gone[m] = true
		r.regrow[m.sb] = true
	}
	for _, jn := range r.joins {
		r.regrow[jn.sb] = true
	}
	// The cgroups of each regrown sandbox's surviving live members that
	// dedication looks at: those placed before rule 3 (see anchored).
	in := map[int32]map[string]bool{}
	for k, grow := range r.regrow {
		if !grow {
			continue
		}
		live := map[string]bool{}
		for _, m := range r.prev.Sandboxes[k].Members {
			if p := r.now(m); !gone[m] && !p.Zombie() && anchored(m) {
				live["v2:"+p.Cgroup], live["v1:"+p.Freezer] = true, true
			}
		}
		in[int32(k)] = live
	}
	ok := func(live map[string]bool, p *proc.Process) bool {
		for _, c := range []struct{ hier, path string }{{"v2:", p.Cgroup}, {"v1:", p.Freezer}} {
			if c.path != "" && !live[c.hier+c.path] {
				return false
			}
		}
		return true
	}
	for _, jn := range r.joins {
		sb := r.prev.Sandboxes[jn.sb]
		if !ok(in[jn.sb], jn.p) || r.namesSandbox(jn.p.Cgroup, sb.ID) {
			return false
		}
		if jn.via == ViaRule && !r.sibling(sb, jn.p, jn.match, gone) {
			return false
		}
	}
	for _, m := range r.gone {
		sb := r.prev.Sandboxes[m.sb]
		if r.namesSandbox(m.Cgroup, sb.ID) || (!m.Zombie() && !ok(in[m.sb], m.Process)) {
			return false
		}
		if m.Via == ViaRule {
			match, _ := r.matchOf(m.Process)
			if !r.sibling(sb, m.Process, match, gone) {
				return false
			}
		}
	}
	return true
}

// namesSandbox reports whether a token of the cgroup path names a sandbox
// or an alias other than own: such a member may be what folded one sandbox
// into another (see mergeByCgroupName), and the fold would not survive its
// exit.
func (r *incremental) namesSandbox(path, own string) bool {
	if r.names == nil {
		r.names = map[string]bool{}
		for _, sb := range r.prev.Sandboxes {
			r.names[sb.ID] = true
			for _, a := range sb.Aliases {
				r.names[a] = true
			}
		}
	}
	for tok := range strings.FieldsFuncSeq(path, isCgroupSeparator) {
		if len(tok) >= minIDInPath && tok != own && r.names[tok] {
			return true
		}
	}
	return false
}

// relevantOld reports whether o, a process in no sandbox that is gone or
// changed, was something the latest full Build's answer depended on.
func (l *lastBuild) relevantOld(snap *proc.Snapshot, o *proc.Process) bool {
	if l.treatedSpecially(snap, o.PID) {
		return true
	}
	return !o.Kernel && l.inAskedCgroup(o)
}

// inAskedCgroup reports whether p lives in or below a cgroup that was asked
// whether it is dedicated.
func (l *lastBuild) inAskedCgroup(p *proc.Process) bool {
	return under(p.Cgroup, l.cgroups[0]) || under(p.Freezer, l.cgroups[1])
}

func under(path string, dirs map[string]struct{}) bool {
	for path != "" && len(dirs) > 0 {
		if _, ok := dirs[path]; ok {
			return true
		}
		i := strings.LastIndexByte(path, '/')
		if i <= 0 {
			return false
		}
		path = path[:i]
	}
	return false
}

// treatedSpecially reports whether pid is one Build treats specially whatever it
// runs: PID 1, sandtop, or one a supervisor walk looked at.
func (l *lastBuild) treatedSpecially(snap *proc.Snapshot, pid int) bool {
	_, walked := l.supWalk[pid]
	return walked || pid <= 1 || pid == snap.Self
}
