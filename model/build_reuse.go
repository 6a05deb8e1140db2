package model

import (
	"github.com/sandtop/sandtop/proc"
)

// A watch loop builds a view every second of a host where, between two
// refreshes, almost nothing that decides attribution changes: processes
// tick CPU and RSS, unrelated ones come and go, and inside sandboxes short
// jobs start and exit. Rebuilding every sandbox for that cost about 7 µs a
// process, and grouping must stay under a tenth of a refresh. So a Build
// first compares the snapshot with the last one, process by process
// (unchanged processes are the same *proc.Process, see proc.Scanner). When
// every difference is provably outside every sandbox's inputs, or is a
// leaf joining or leaving a sandbox in a way that changes nothing else
// about it, the last attribution stands: sandboxes none of whose members
// changed are shared with the previous view, the others are copied with
// their new processes (and their trees laid again when members came or
// went) and judged again (badges, supervisor). Anything else, or any
// doubt, is a full Build. TestReuseMatchesFullBuild holds the two equal
// through random changes of every kind.
//
// Reuse is in three parts: the walk over both snapshots (this file), the
// classification of each change (build_reuse_classify.go) and applying
// the changes to the previous view (build_reuse_apply.go).

// lastBuild is what the latest full Build decided, and what its answer
// depended on beyond the sandboxes' own members.
type lastBuild struct {
	snap *proc.Snapshot
	view *View
	// members holds the Member of each process of snap, by position; nil
	// for a process in no sandbox.
	members []*Member
	// memos are the match memos of snap's processes, by position (see
	// matchMemo); spareMemos is the array before last, for the next Build
	// to fill.
	memos, spareMemos []matchMemo
	// reusable is false when snap, built again on view, would not give
	// view back (see build.stickyAncestors).
	reusable bool
	// supWalk holds every pid an ancestor-supervisor walk looked up.
	supWalk map[int]struct{}
	// groups holds the process groups that rule 1b pulled in, and the ID
	// of the sandbox each joined.
	groups map[int]string
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
	r := incremental{l: l, rules: b.rules, snap: snap, prev: prev}
	// Walk both snapshots in pid order at once.
	olds, news := l.snap.Procs, snap.Procs
	var unattributed []*proc.Process
	for i, j := 0, 0; i < len(news) || j < len(olds); {
		switch {
		case j == len(olds) || (i < len(news) && news[i].PID < olds[j].PID): // born
			r.realign(i)
			n := news[i]
			switch kind, jn := r.classifyNew(n); kind {
			case outside:
				unattributed = appendUser(unattributed, n)
			case joins:
				jn.pos, jn.p = i, n
				r.joins = append(r.joins, jn)
				r.mark(jn.sb)
			default:
				return nil
			}
			i++
		case i == len(news) || olds[j].PID < news[i].PID: // gone
			r.realign(i)
			if m := l.members[j]; m != nil {
				if !r.removable(m) {
					return nil
				}
				r.gone = append(r.gone, m)
				r.mark(m.sb)
			} else if l.relevantOld(snap, olds[j]) {
				return nil
			}
			j++
		default:
			n, o, m := news[i], olds[j], l.members[j]
			same := n == o || sameShape(n, o)
			r.track(i, j, n, o, same)
			switch {
			case same:
				if n != o && m != nil {
					r.change(m, n)
				}
			case m != nil && r.reExec(m, n, o):
				r.change(m, n)
				r.execs++
			case m != nil || l.relevantOld(snap, o):
				return nil
			default:
				if kind, _ := r.classifyNew(n); kind != outside {
					return nil
				}
			}
			if r.at != nil {
				r.at[i] = m
			}
			if m == nil {
				unattributed = appendUser(unattributed, n)
			}
			i++
			j++
		}
	}
	if !r.membersAgree() || r.touchesConflict() {
		return nil
	}

	v := r.apply(unattributed)
	if v == nil {
		return nil
	}
	l.snap, l.view, l.members = snap, v, v.members
	if r.memos != nil {
		// The memos retired are cleared now rather than when they are
		// used again: until then they would keep the processes of an
		// older snapshot.
		clear(l.memos)
		l.memos, l.spareMemos = r.memos, l.memos
	}
	b.stats.Reused++
	b.stats.ReusedJoins += len(r.joins)
	b.stats.ReusedExits += len(r.gone)
	b.stats.ReusedExecs += r.execs
	return v
}

// incremental is the working state of one incremental Build (a reuse of
// the last view).
type incremental struct {
	l     *lastBuild
	rules Rules
	// at holds the last Member of each process, by new position, once a
	// process was born or exited (see realign); until then the positions
	// agree and l.members says it. apply points it at the new view's
	// sandboxes. It is an array of its own, since the views before keep
	// theirs.
	at []*Member
	// memos are the match memos of the new snapshot by position, carried
	// from the last (see track); a newborn has none, so that a host whose
	// short-lived processes never touch a sandbox adds nothing.
	memos []matchMemo
	snap  *proc.Snapshot
	prev  *View
	// changed maps a member to its process in snap when that differs;
	// dirty marks the sandboxes (by position) to judge again.
	changed map[*Member]*proc.Process
	dirty   []bool
	// joins are newborns that join a sandbox, gone the members that
	// exited; regrow marks their sandboxes, and born holds the Member each
	// newborn got. execs counts members that exec'd where they were.
	joins  []join
	gone   []*Member
	regrow []bool
	born   map[*proc.Process]*Member
	execs  int
	// names holds every sandbox ID and alias (see namesSandbox).
	names map[string]bool
}

// join is a newborn that joins a sandbox: by a rule that placed an older
// sibling there (rule 1), by its process group (1b) or through its parent
// (2).
type join struct {
	pos int // in snap.Procs
	p   *proc.Process
	sb  int32
	via Via
	by  string
	// match is the rule's match, for a newborn a rule recognised.
	match Match
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

// track carries the match memo of o, at position j of the last snapshot,
// to n, which is at position i of the new one and has o's pid: a memo
// that holds for n is moved on to it, any other is left behind, so that
// no memo pins an older process. While no process was born or exited, the
// positions agree, and the memos are updated where they are (a steady
// refresh copies none); when one was (see realign), they move to an
// array of their own, which replaces the last once the reuse succeeds. An
// update in place that a failed reuse leaves behind is still true: a
// memo says what it holds for by its p. same says that n and o agree on
// everything attribution reads (sameShape), the match inputs included.
func (r *incremental) track(i, j int, n, o *proc.Process, same bool) {
	l := r.l
	if l.memos == nil || (r.memos == nil && n == o) {
		return
	}
	m := l.memos[j]
	switch {
	case m.p == nil:
	case same:
		m.p = n
	case n.Start != o.Start || !m.holds(n):
		m = matchMemo{}
	default:
		m.p = n
	}
	if r.memos == nil {
		l.memos[j] = m
	} else {
		r.memos[i] = m
	}
}

// realign gives the new snapshot's members and memos arrays of their own,
// at the first birth or exit, i being the first new position not yet
// walked.
func (r *incremental) realign(i int) {
	if r.at == nil {
		r.at = make([]*Member, len(r.snap.Procs))
		copy(r.at, r.l.members[:i])
	}
	if r.memos != nil || r.l.memos == nil {
		return
	}
	r.memos = grown(r.l.spareMemos, len(r.snap.Procs))
	r.l.spareMemos = nil
	copy(r.memos, r.l.memos[:i])
}

func appendUser(list []*proc.Process, p *proc.Process) []*proc.Process {
	if p.Kernel {
		return list
	}
	return append(list, p)
}
