package model

import (
	"slices"
	"strings"

	"github.com/sandtop/sandtop/proc"
)

// A watch loop builds a view every second of a host where, between two
// refreshes, almost nothing that decides attribution changes: processes
// tick CPU and RSS, a few unrelated ones are born and die. Rebuilding every
// sandbox for that cost about 1.7 µs a process (issue 6 wants grouping
// under a tenth of a refresh). So a Build first compares the snapshot with
// the one the latest full Build saw, process by process (unchanged
// processes are the same *proc.Process, see proc.Scanner), and when every
// difference is provably outside every sandbox's inputs, it hands back the
// same attribution: sandboxes none of whose members changed are shared
// with the previous view, and the others are copied with their new
// processes and judged again (badges, supervisor). Anything else, or any
// doubt, is a full Build; TestReuseMatchesFullBuild holds the two equal
// through random changes of every kind.

// lastBuild is what the latest full Build decided, and what its answer
// depended on beyond the sandboxes' own members.
type lastBuild struct {
	snap *proc.Snapshot
	view *View
	// members holds the Member of each process of snap, by position; nil
	// for a process in no sandbox.
	members []*Member
	// spare is the members array before last, for the next reuse to fill.
	spare []*Member
	// reusable is false when snap, built again on view, would not give
	// view back (see build.stickyAncestors).
	reusable bool
	// supWalk holds every pid an ancestor-supervisor walk looked up.
	supWalk map[int]struct{}
	// groups holds the process groups that rule 1b pulled in.
	groups map[int]struct{}
	// cgroups holds the v2 ([0]) and v1 freezer ([1]) cgroups asked
	// whether they are dedicated to a sandbox: what lives in them decides.
	cgroups [2]map[string]struct{}
}

// reuse returns the view of snap when it can be derived from the latest
// full Build, or nil when a full Build is needed.
func (b *Builder) reuse(snap *proc.Snapshot, prev *View) *View {
	l := b.last
	if l == nil || !l.reusable || prev == nil || prev != l.view || snap.Self != l.snap.Self {
		return nil
	}
	// Walk both snapshots in pid order at once.
	olds, news := l.snap.Procs, snap.Procs
	at := grown(l.spare, len(news)) // the last Member of each process, by new position
	var changed map[*Member]*proc.Process
	var dirty []bool // by sandbox position
	var unattributed []*proc.Process
	for i, j := 0, 0; i < len(news) || j < len(olds); {
		switch {
		case j == len(olds) || (i < len(news) && news[i].PID < olds[j].PID): // born
			if l.relevantNew(b.rules, snap, news[i]) {
				return nil
			}
			unattributed = appendUser(unattributed, news[i])
			i++
		case i == len(news) || olds[j].PID < news[i].PID: // gone
			if l.members[j] != nil || l.relevantOld(snap, olds[j]) {
				return nil
			}
			j++
		default:
			n, o, m := news[i], olds[j], l.members[j]
			switch {
			case n == o:
			case sameShape(n, o):
				if m != nil {
					if changed == nil {
						changed = map[*Member]*proc.Process{}
						dirty = make([]bool, len(prev.Sandboxes))
					}
					changed[m] = n
					dirty[m.sb] = true
				}
			case m != nil || l.relevantOld(snap, o) || l.relevantNew(b.rules, snap, n):
				return nil
			}
			at[i] = m
			if m == nil {
				unattributed = appendUser(unattributed, n)
			}
			i++
			j++
		}
	}

	cgroups := sameStates(snap.Cgroups, l.snap.Cgroups) && sameStates(snap.Freezers, l.snap.Freezers)
	listeners := sameListeners(snap.Listeners, l.snap.Listeners)
	v := &View{
		Time:         snap.Time,
		Host:         snap.Hostname,
		Snapshot:     snap,
		Sandboxes:    make([]*Sandbox, len(prev.Sandboxes)),
		Unattributed: unattributed,
		byID:         prev.byID,
		byMember:     prev.byMember,
	}
	for k, sb := range prev.Sandboxes {
		again := !cgroups || (dirty != nil && dirty[k]) || (!listeners && sb.socket != "") ||
			(sb.Supervisor != nil && snap.ByPID[sb.Supervisor.PID] != sb.Supervisor)
		if again {
			sb = refresh(sb, snap, changed)
		}
		v.Sandboxes[k] = sb
	}
	for i, m := range at {
		if m != nil {
			at[i] = v.Sandboxes[m.sb].Members[m.ord]
		}
	}
	l.snap, l.view, l.members, l.spare = snap, v, at, l.members
	return v
}

// relevantOld reports whether o, a process in no sandbox that is gone or
// changed, was something the latest full Build's answer depended on.
func (l *lastBuild) relevantOld(snap *proc.Snapshot, o *proc.Process) bool {
	if _, ok := l.supWalk[o.PID]; ok || o.PID <= 1 || o.PID == snap.Self {
		return true
	}
	return !o.Kernel && l.inAskedCgroup(o)
}

// relevantNew reports whether n, a process that is new or changed, could
// be in a sandbox or change one: a rule matches it, it is in a process group
// or a cgroup a sandbox depends on, a member is its ancestor, or a
// supervisor walk passes it.
func (l *lastBuild) relevantNew(rules Rules, snap *proc.Snapshot, n *proc.Process) bool {
	if _, ok := l.supWalk[n.PID]; ok || n.PID <= 1 || n.PID == snap.Self {
		return true
	}
	if n.Kernel {
		return false
	}
	if l.inAskedCgroup(n) {
		return true
	}
	// Not through the Builder's memo: only a full Build sweeps it, and a
	// host whose short-lived processes never touch a sandbox would grow
	// it with every birth.
	if _, ok := rules.Match(n); ok {
		return true
	}
	if _, ok := l.groups[n.PGID]; ok {
		return true
	}
	for q, steps := snap.ByPID[n.PPID], 0; q != nil && steps <= len(snap.Procs); q, steps = snap.ByPID[q.PPID], steps+1 {
		if q.Kernel || q.PID <= 1 || q.PID == snap.Self {
			break // the ancestor walk of rule 2 stops there too
		}
		if l.view.SandboxOf(q.ID()) != nil {
			return true
		}
	}
	return false
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

// sameShape reports whether a and b agree on everything attribution reads:
// they may differ only in CPU, memory, threads and run state.
func sameShape(a, b *proc.Process) bool {
	return a.PID == b.PID && a.Start == b.Start && a.PPID == b.PPID && a.PGID == b.PGID &&
		a.Kernel == b.Kernel && a.Zombie() == b.Zombie() && a.Comm == b.Comm && a.Exe == b.Exe &&
		a.Cwd == b.Cwd && a.Cgroup == b.Cgroup && a.Freezer == b.Freezer && slices.Equal(a.Argv, b.Argv)
}

// refresh copies old with the processes of snap: the same members, tree and
// supervisor, with badges and the socket supervisor judged again.
func refresh(old *Sandbox, snap *proc.Snapshot, changed map[*Member]*proc.Process) *Sandbox {
	sb := *old
	slab := make([]Member, len(old.Members))
	kids := 0
	for k, m := range old.Members {
		slab[k] = *m
		if p := changed[m]; p != nil {
			slab[k].Process = p
		}
		if m.Parent != nil {
			slab[k].Parent = &slab[m.Parent.ord]
		}
		kids += len(m.Children)
	}
	backing := make([]*Member, kids)
	sb.Members = make([]*Member, len(slab))
	for k, m := range old.Members {
		sb.Members[k] = &slab[k]
		if n := len(m.Children); n > 0 {
			c := backing[:n:n]
			backing = backing[n:]
			for x, ch := range m.Children {
				c[x] = &slab[ch.ord]
			}
			slab[k].Children = c
		}
	}
	sb.Root = &slab[old.Root.ord]
	if old.Supervisor != nil {
		sb.Supervisor = snap.ByPID[old.Supervisor.PID]
	}
	if old.socket != "" {
		judgeSocket(&sb, snap.Listeners)
	}
	sb.Orphan = sb.supOrphan
	badge(&sb, snap)
	return &sb
}

func appendUser(list []*proc.Process, p *proc.Process) []*proc.Process {
	if p.Kernel {
		return list
	}
	return append(list, p)
}

func sameStates(a, b map[string]proc.CgroupState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, s := range a {
		if t, ok := b[k]; !ok || t != s {
			return false
		}
	}
	return true
}

func sameListeners(a, b map[string]bool) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
