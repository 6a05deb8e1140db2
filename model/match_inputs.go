package model

import (
	"hash/maphash"
	"slices"
	"sync"

	"github.com/sandtop/sandtop/proc"
)

// matchInputs is everything Rules.Match and Rules.Needs read of a process besides
// Unread: two processes that are alike get the same answers. Most of a
// host's processes are alike with others (a container's workers: the same
// argv in the same cgroup), so the memos of one-shot commands (NeedsAlike,
// the one-off Build's) answer once per set of alike processes.
//
// A matchInputs holds the process's own strings and argv, not copies: a memo
// costs their headers, and finding a process in it allocates nothing.
type matchInputs struct {
	comm, exe, cwd, cgroup, freezer string
	argv                            []string
	nestedPIDs, kernel              bool
}

func matchInputsOf(p *proc.Process) matchInputs {
	return matchInputs{
		comm: p.Comm, exe: p.Exe, cwd: p.Cwd, cgroup: p.Cgroup, freezer: p.Freezer,
		argv: p.Argv, nestedPIDs: len(p.NSpid) >= 2, kernel: p.Kernel,
	}
}

// alikeProcs reports whether p and q are alike. A process that did not
// exec shares its argv between snapshots, so its strings usually compare
// by pointer.
func alikeProcs(p, q *proc.Process) bool {
	a, b := matchInputsOf(p), matchInputsOf(q)
	return a.equal(&b)
}

func (a *matchInputs) equal(b *matchInputs) bool {
	return a.comm == b.comm && a.exe == b.exe && a.cwd == b.cwd && a.cgroup == b.cgroup &&
		a.freezer == b.freezer && a.nestedPIDs == b.nestedPIDs && a.kernel == b.kernel &&
		slices.Equal(a.argv, b.argv)
}

// alikeSeed seeds every alike hash: the memos live within one process.
var alikeSeed = maphash.MakeSeed()

// hash places a in the memos. Neither a path, a comm nor an argument can
// hold a NUL, so the fields are told apart by one; two sets that still
// share a hash are told apart by equal.
func (a *matchInputs) hash() uint64 {
	var h maphash.Hash
	h.SetSeed(alikeSeed)
	for _, s := range [...]string{a.comm, a.exe, a.cwd, a.cgroup, a.freezer} {
		h.WriteString(s)
		h.WriteByte(0)
	}
	var flags byte
	if a.nestedPIDs {
		flags |= 1
	}
	if a.kernel {
		flags |= 2
	}
	h.WriteByte(flags)
	for _, s := range a.argv {
		h.WriteString(s)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// alikeMemo is the one-off Build's memo: the match of each set of alike
// processes, in a fixed table of slots like needsMemo's, each kept with the
// process whose hash last chose it. A snapshot's processes do not change,
// so the process stands for its set at the cost of a pointer. A nil match
// is no match.
type alikeMemo struct {
	slots [alikeMemoSlots]alikeMatch
}

const alikeMemoSlots = 1024

type alikeMatch struct {
	hash uint64
	p    *proc.Process
	m    *Match
}

// match is the match of p, looked up by what the rules read of it, and
// made and remembered when it is not in the memo.
func (memo *alikeMemo) match(rules Rules, p *proc.Process) *Match {
	a := matchInputsOf(p)
	h := a.hash()
	slot := &memo.slots[h%alikeMemoSlots]
	if slot.p != nil && slot.hash == h {
		if sa := matchInputsOf(slot.p); sa.equal(&a) {
			return slot.m
		}
	}
	m := matchOrNil(rules.Match(p))
	*slot = alikeMatch{hash: h, p: p, m: m}
	return m
}

// needsMemo is NeedsAlike's memo: a fixed table of answers, each slot
// holding the last set of alike processes (with the same unread fields)
// whose hash chose it. A table of fixed size, rather than a map of every
// set, costs the same on any host: where most sets are one process's (a
// fleet of small sandboxes), a map held a copy of every process's fields
// for nothing, 1.5 MB at 10,000 processes; where sets repeat (a
// container's workers), a host has far fewer of them than slots. The scan
// may reuse the Process it asks about, so a slot keeps the set by value
// (its strings and argv, which the scan does not change once read).
type needsMemo struct {
	mu    sync.Mutex
	slots [needsMemoSlots]needsSlot
}

const needsMemoSlots = 1024

type needsSlot struct {
	hash   uint64
	unread proc.Fields
	a      matchInputs
	need   proc.Fields
	used   bool
}

func (m *needsMemo) needs(rules Rules, p *proc.Process) proc.Fields {
	if p == nil || p.Kernel || p.Unread == 0 {
		return 0
	}
	a := matchInputsOf(p)
	h := a.hash()
	slot := &m.slots[h%needsMemoSlots]
	m.mu.Lock()
	hit := slot.used && slot.hash == h && slot.unread == p.Unread && slot.a.equal(&a)
	need := slot.need
	m.mu.Unlock()
	if hit {
		return need
	}
	need = rules.Needs(p)
	m.mu.Lock()
	*slot = needsSlot{hash: h, unread: p.Unread, a: a, need: need, used: true}
	m.mu.Unlock()
	return need
}

// sameShape reports whether a and b agree on everything attribution reads:
// they may differ only in CPU, memory, threads and run state.
func sameShape(a, b *proc.Process) bool {
	return samePlace(a, b) && alikeProcs(a, b)
}

// samePlace reports whether a and b are the same identity in the same
// place: parent, process group, cgroups, kernel thread or not, zombie or
// not. What rules match on (see matchInputs) may differ.
func samePlace(a, b *proc.Process) bool {
	return a.PID == b.PID && a.Start == b.Start && a.PPID == b.PPID && a.PGID == b.PGID &&
		a.Kernel == b.Kernel && a.Zombie() == b.Zombie() && a.Cgroup == b.Cgroup && a.Freezer == b.Freezer
}
