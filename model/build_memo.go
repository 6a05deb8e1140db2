package model

import (
	"iter"
	"runtime"
	"sync"

	"github.com/sandtop/sandtop/proc"
)

// matchMemo is a remembered rule match of one identity. The memos are
// kept by position in the latest snapshot, and carried by pid to the
// positions of the next (see carryMemos, and reuse): a slice costs 16
// bytes a process where a map by identity cost several times that, and
// needs no hashing. p is the process the match was computed for: what
// rules match on can change while the identity lives (execve changes argv
// and exe, and usually comm; a process can chdir or be moved to another
// cgroup), so a process other than p must have the same inputs for the
// memo to hold. The scanner hands out the same *Process for a process that
// did not change, so p usually compares by pointer. Keeping p instead of a
// copy of its inputs costs a pointer instead of a hundred bytes; p is
// moved on to the process of the newest snapshot whenever the memo holds
// for it, and a memo that does not is dropped, so no older process is
// pinned. The zero matchMemo remembers nothing.
type matchMemo struct {
	p *proc.Process
	// m is nil when no rule matched.
	m *sharedMatch
}

// sharedMatch is one match that every memo with the same result points
// at: the processes of a sandbox mostly capture the same variables, and a
// Vars map per process was a third of a steady Builder's memory. Its
// Vars are read-only, like every Match's (see build.addVars).
type sharedMatch struct {
	Match
	vars *sharedVars
	gen  uint64
}

// sharedKey tells matches apart: the rule, the matcher that yielded the
// ID, and the captures in one string (see varsKey), which hold the ID and
// the namespace (see Rule.match).
type sharedKey struct {
	rule        *Rule
	by, varsKey string
}

// sharedVars is one set of captures, shared by every match that captured
// the same (a sandbox's shim by its flag and its workers by their cgroup)
// and by the sandboxes they start (see build.addVars). key is its varsKey.
type sharedVars struct {
	vars map[string]string
	key  string
	gen  uint64
}

// holds reports whether the memo answers for p.
func (m matchMemo) holds(p *proc.Process) bool {
	return m.p == p || alikeProcs(m.p, p)
}

// result is the remembered match.
func (m matchMemo) result() (Match, bool) {
	if m.m == nil {
		return Match{}, false
	}
	return m.m.Match, true
}

// claimKey is one question build.claims answers: does dir name the sandbox
// id, given the rules that matched the sandbox (a bit per rule index; a
// sandbox matched by a rule beyond the 64th is not remembered).
type claimKey struct {
	id, dir string
	rules   uint64
}

type claimMemo struct {
	claim claim
	gen   uint64
}

// prematch matches every process of a one-off Build before grouping
// starts, spread over up to four goroutines for a large snapshot, so that
// the grouping passes (which ask about each process up to five times)
// find each match by its position in the snapshot.
func (b *Builder) prematch(procs []*proc.Process, ix *pidIndex) {
	b.pre, b.preProcs, b.preIx = make([]*Match, len(procs)), procs, ix
	work := func(part []*proc.Process, out []*Match, memo *alikeMemo) {
		for i, p := range part {
			out[i] = memo.match(b.rules, p)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 4, max(1, len(procs)/prematchPerWorker))
	if workers == 1 {
		work(procs, b.pre, b.matchInputs)
		return
	}
	var wg sync.WaitGroup
	per := (len(procs) + workers - 1) / workers
	for w := range workers {
		from, to := min(w*per, len(procs)), min((w+1)*per, len(procs))
		wg.Go(func() { work(procs[from:to], b.pre[from:to], &alikeMemo{}) })
	}
	wg.Wait()
}

// matchOrNil and deref turn a match into a pointer, nil for no match, and
// back.
func matchOrNil(m Match, ok bool) *Match {
	if !ok {
		return nil
	}
	return &m
}

func deref(m *Match) (Match, bool) {
	if m == nil {
		return Match{}, false
	}
	return *m, true
}

// prematchPerWorker is the fewest processes for which prematch starts
// another goroutine. A variable so that a test can run the parallel path
// on a small snapshot.
var prematchPerWorker = 1000

func (b *Builder) match(p *proc.Process) (Match, bool) {
	if b.pre != nil {
		// A process of another snapshot (the previous view's) is matched
		// below like any other.
		if i := b.preIx.of(p.PID); i >= 0 && b.preProcs[i] == p {
			return deref(b.pre[i])
		}
	}
	if b.matchInputs != nil {
		return deref(b.matchInputs.match(b.rules, p))
	}
	i := b.scratch.ix.of(p.PID)
	if i < 0 || i >= len(b.memos) || b.memoProcs[i] != p {
		// Not a process of the snapshot being built.
		return b.rules.Match(p)
	}
	memo := &b.memos[i]
	if memo.p != nil && memo.holds(p) {
		memo.p = p
		if memo.m != nil {
			memo.m.gen = b.gen
		}
		return memo.result()
	}
	m, ok := b.rules.Match(p)
	*memo = matchMemo{p: p}
	if ok {
		memo.m = b.share(m)
		m = memo.m.Match
	}
	return m, ok
}

// carryMemos returns the memos of procs, a full Build's snapshot, by
// position: each identity that was in the latest snapshot keeps its memo.
func (b *Builder) carryMemos(procs []*proc.Process) []matchMemo {
	l := b.last
	if l == nil {
		return make([]matchMemo, len(procs))
	}
	out := grown(l.spareMemos, len(procs))
	l.spareMemos = nil
	if l.memos == nil {
		return out
	}
	for i, j := range sameIdentities(procs, l.snap.Procs) {
		out[i] = l.memos[j]
	}
	return out
}

// sameIdentities yields the positions (i, j) of every identity in both
// news and olds, the processes of two snapshots, both in pid order: a walk
// side by side rather than a lookup of each process in the other.
func sameIdentities(news, olds []*proc.Process) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		for i, j := 0, 0; i < len(news) && j < len(olds); {
			switch n, o := news[i], olds[j]; {
			case n.PID < o.PID:
				i++
			case n.PID > o.PID:
				j++
			default:
				if n.Start == o.Start && !yield(i, j) {
					return
				}
				i++
				j++
			}
		}
	}
}

// share returns the shared copy of m, made if need be.
func (b *Builder) share(m Match) *sharedMatch {
	vk := varsKey(m.Vars)
	sv := b.vars[vk]
	if sv == nil {
		sv = &sharedVars{vars: m.Vars, key: vk}
		b.vars[vk] = sv
	}
	k := sharedKey{rule: m.Rule, by: m.By, varsKey: sv.key}
	sm := b.shared[k]
	if sm == nil {
		m.Vars = sv.vars
		sm = &sharedMatch{Match: m, vars: sv}
		b.shared[k] = sm
	}
	sm.gen = b.gen
	return sm
}

// sweep forgets the memos the latest Build did not use: those of
// processes it did not match (excluded ones, and any carried over that
// were not asked about), matches no memo holds, and cgroup questions no
// longer asked.
func (b *Builder) sweep(snap *proc.Snapshot) {
	for i := range b.memos {
		if b.memos[i].p != snap.Procs[i] {
			b.memos[i] = matchMemo{}
		}
	}
	for k, m := range b.shared {
		if m.gen != b.gen {
			delete(b.shared, k)
		} else {
			m.vars.gen = b.gen
		}
	}
	for k, v := range b.vars {
		if v.gen != b.gen {
			delete(b.vars, k)
		}
	}
	for k, c := range b.claimed {
		if c.gen != b.gen {
			delete(b.claimed, k)
		}
	}
}
