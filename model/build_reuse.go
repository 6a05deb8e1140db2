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
// Reuse is in three parts, each in its own file and each handing the next
// all it needs: the comparison of both snapshots (this file), the
// classification of each difference (build_reuse_classify.go) and applying
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
	// spare holds the lists of the latest compare, for the next to fill:
	// a refresh where every process ticked would otherwise allocate them
	// anew each time.
	spare differences
}

// reuse returns the view of snap when it can be derived from the latest
// full Build, or nil when a full Build is needed. It reads in the order
// it works: compare (below) finds what differs between the two snapshots,
// classify (build_reuse_classify.go) decides what each difference does to
// the attribution, and apply (build_reuse_apply.go) makes the new view.
func (b *Builder) reuse(snap *proc.Snapshot, prev *View) *View {
	l := b.last
	if l == nil || !l.reusable || prev == nil || prev != l.view || snap.Self != l.snap.Self {
		return nil
	}
	r := incremental{l: l, rules: b.rules, snap: snap, prev: prev}
	d := r.compare()
	l.spare = d
	if !r.classify(d) {
		return nil
	}
	v := r.apply()
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

// pair is a process at position i of the new snapshot that was at
// position j of the last.
type pair struct{ i, j int32 }

// differences is what compare found between the last snapshot and this
// one; processes that are the same *proc.Process in both (most, on a
// steady host) are in none of its lists.
type differences struct {
	// born are the new positions of processes the last snapshot did not
	// have, gone the last positions of those this one does not.
	born, gone []int
	// ticked are members whose process changed only in what attribution
	// does not read (CPU, memory, threads, run state).
	ticked []pair
	// reshaped are processes, members or not, that changed in something
	// attribution reads.
	reshaped []pair
}

// compare walks both snapshots in pid order at once, sorting what
// differs, and carries the match memos to the new snapshot (track).
func (r *incremental) compare() differences {
	d := r.l.spare
	d.born, d.gone, d.ticked, d.reshaped = d.born[:0], d.gone[:0], d.ticked[:0], d.reshaped[:0]
	olds, news, members := r.l.snap.Procs, r.snap.Procs, r.l.members
	for i, j := 0, 0; i < len(news) || j < len(olds); {
		switch {
		case j == len(olds) || (i < len(news) && news[i].PID < olds[j].PID):
			r.realign(i)
			d.born = append(d.born, i)
			i++
		case i == len(news) || olds[j].PID < news[i].PID:
			r.realign(i)
			d.gone = append(d.gone, j)
			j++
		default:
			n, o, m := news[i], olds[j], members[j]
			same := n == o || sameShape(n, o)
			r.track(i, j, n, o, same)
			switch {
			case !same:
				d.reshaped = append(d.reshaped, pair{int32(i), int32(j)})
			case n != o && m != nil:
				d.ticked = append(d.ticked, pair{int32(i), int32(j)})
			}
			if r.at != nil {
				r.at[i] = m
			}
			i++
			j++
		}
	}
	return d
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
