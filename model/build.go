package model

import (
	"cmp"
	"slices"
	"strings"

	"github.com/sandtop/sandtop/proc"
)

// maxSupervisorDepth bounds the ancestor walk for a supervisor, as the vm0
// runner does (crates/runner/src/process/ancestry.rs walks 16 levels).
const maxSupervisorDepth = 16

// minIDInPath is the shortest sandbox ID that is trusted to name a cgroup
// when it appears inside a path component; shorter IDs match by accident.
const minIDInPath = 8

// Builder turns snapshots into views. It remembers each identity's rule
// match so that a refresh matches only processes it has not seen; it does
// no I/O, so Build stays a pure function of its inputs.
type Builder struct {
	rules     Rules
	ruleIndex map[*Rule]int
	// layouts are the rules that recognise a process by its cgroup alone
	// (see adoptLayouts).
	layouts []*Rule
	// rooted holds the runtimes (rule names) that have a rule for a
	// process of their own, not only for a cgroup: a sandbox of theirs
	// that only a cgroup names has lost that process.
	rooted map[string]bool
	// memos, during a full Build, holds the match memo of each process of
	// the snapshot by position (see matchMemo); between Builds it lives in
	// last, aligned with last.snap.
	memos []matchMemo
	// shared holds the matches the memos point at (see sharedMatch), and
	// vars their captures, by varsKey.
	shared map[sharedKey]*sharedMatch
	vars   map[string]*sharedVars
	// claimed remembers build.claims, which runs the rules' cgroup regexps
	// on a sandbox's cgroups: the same few questions every refresh.
	claimed map[claimKey]*claimMemo
	// gen counts Build calls; a memo not used by the latest is dropped.
	gen uint64
	// scratch is the per-process state of a Build, indexed by position in
	// the snapshot.
	scratch scratch
	// last is what the latest full Build decided, for reuse.
	last  *lastBuild
	stats BuildStats
	// alike, in a Builder made for one Build (the Build function),
	// remembers the match of each set of alike processes instead of each
	// identity: there is no refresh to remember identities for.
	matchInputs *alikeMemo
	// pre holds, during a one-off Build, the match of each process of
	// preProcs (the snapshot) by its position (see prematch); preIx finds
	// the position. A pointer per process, not a Match: most processes share
	// a few distinct matches.
	pre      []*Match
	preProcs []*proc.Process
	preIx    *pidIndex
	// memoProcs is the snapshot memos is aligned with.
	memoProcs []*proc.Process
}

// BuildStats counts what a Builder's Builds did: the benchmarks report
// them, and the tests check that reuse was taken when it should be.
type BuildStats struct {
	// Full counts the Builds that grouped their snapshot from scratch;
	// Reused those that reuse derived from the latest full Build.
	Full, Reused int
	// ReusedJoins, ReusedExits and ReusedExecs count what reuse absorbed:
	// newborns that joined a sandbox, members that exited, and members
	// that exec'd where they were.
	ReusedJoins, ReusedExits, ReusedExecs int
}

// Stats returns the counts of the Builds so far.
func (b *Builder) Stats() BuildStats { return b.stats }

// scratch holds the slices a Build indexes by process position (see
// pidIndex). Only ix outlives a Build (see Build).
type scratch struct {
	ix    pidIndex
	owner []*Sandbox
	via   []Via
	by    []string // matcher that recognised the process (rule 1)
	// found and walked cache the ancestor walk of attributeByAncestor.
	found  []*Sandbox
	walked []bool
}

// NewBuilder returns a Builder for the given rules, tried in order.
func NewBuilder(rules Rules) *Builder {
	idx := make(map[*Rule]int, len(rules))
	rooted := map[string]bool{}
	var layouts []*Rule
	for i, r := range rules {
		idx[r] = i
		switch {
		case r == nil:
		case r.onlyCgroup():
			layouts = append(layouts, r)
		default:
			rooted[r.Name] = true
		}
	}
	return &Builder{rules: rules, ruleIndex: idx, layouts: layouts, rooted: rooted, shared: map[sharedKey]*sharedMatch{}, vars: map[string]*sharedVars{}, claimed: map[claimKey]*claimMemo{}}
}

// Build groups a snapshot into sandboxes with a throwaway Builder.
func Build(snap *proc.Snapshot, rules Rules, prev *View) *View {
	b := NewBuilder(rules)
	b.matchInputs = &alikeMemo{}
	return b.Build(snap, prev)
}

// build holds the working state of one Build call.
type build struct {
	*Builder
	snap *proc.Snapshot
	prev *View
	// byID holds the sandboxes by Key; folded the namespaced sandbox that
	// absorbed each "runtime:id" found without a namespace.
	byID   map[string]*Sandbox
	folded map[string]*Sandbox
	// ix finds a pid's position in snap.Procs; owner, via and by are
	// indexed by that position. attributed counts the non-nil owners.
	ix         *pidIndex
	owner      []*Sandbox
	via        []Via
	by         []string
	attributed int
	procs      map[*Sandbox][]*proc.Process // members, in attribution order
	rules      map[*Sandbox][]*Rule
	firstR     map[*Sandbox]int // lowest rule index that matched the sandbox
	// matched keeps, per sandbox, the processes a rule matched, for the
	// socket-supervisor test (the flag is on the matched process).
	matched map[*Sandbox][]*proc.Process
	// procChunks, matchedChunks and childChunks back the lists of procs,
	// matched and Member.Children.
	procChunks    chunks[*proc.Process]
	matchedChunks chunks[*proc.Process]
	childChunks   chunks[*Member]
	// last collects what reuse needs to know about this Build.
	last *lastBuild
	// keyBuf is scratch space for sandbox.
	keyBuf []byte
	// stickyAncestors is set when a process joined a sandbox only through
	// a sticky member (rule 2 after rule 4): the next Build labels it
	// sticky instead, so this Build's result cannot be reused as it is.
	stickyAncestors bool
	// nestedMerged is set when mergeNested folded a sandbox into another:
	// which process links the two can change with any birth or death, so
	// the next Build is a full one.
	nestedMerged bool
}

// Build groups snap into sandboxes. prev, when not nil, is the previous view
// of the same host: a process that was in a sandbox there stays in it while
// its identity lives (sticky attribution).
func (b *Builder) Build(snap *proc.Snapshot, prev *View) *View {
	if prev != nil && prev.base != nil {
		// Leftover sandboxes have no members: the view they were added
		// to is the one to compare with.
		prev = prev.base
	}
	if v := b.reuse(snap, prev); v != nil {
		return v
	}
	b.stats.Full++
	b.gen++
	n := len(snap.Procs)
	sc := &b.scratch
	sc.ix.reset(snap.Procs)
	sc.owner, sc.via, sc.by = grown(sc.owner, n), grown(sc.via, n), grown(sc.by, n)
	w := &build{
		Builder: b,
		snap:    snap,
		prev:    prev,
		byID:    map[string]*Sandbox{},
		folded:  map[string]*Sandbox{},
		ix:      &sc.ix,
		owner:   sc.owner,
		via:     sc.via,
		by:      sc.by,
		rules:   map[*Sandbox][]*Rule{},
		firstR:  map[*Sandbox]int{},
		procs:   map[*Sandbox][]*proc.Process{},
		matched: map[*Sandbox][]*proc.Process{},
		// Room for a chunk per ten processes, a sandbox's worth.
		procChunks:    newChunks[*proc.Process](len(snap.Procs) / 10 * chunkLen),
		matchedChunks: newChunks[*proc.Process](len(snap.Procs) / 10 * chunkLen),
		last: &lastBuild{
			supWalk: map[int]struct{}{},
			groups:  map[int]string{},
			cgroups: [2]map[string]struct{}{{}, {}},
		},
	}
	var oldMemos []matchMemo
	if b.matchInputs != nil {
		b.prematch(snap.Procs, &sc.ix)
		defer func() { b.pre, b.preProcs, b.preIx = nil, nil, nil }()
	} else {
		if b.last != nil {
			oldMemos = b.last.memos
		}
		b.memos, b.memoProcs = b.carryMemos(snap.Procs), snap.Procs
	}
	w.attributeByRule()
	w.foldUnqualified()
	w.resolveClaims()
	w.attributeByGroup()
	w.attributeByAncestor()
	w.mergeNested()
	w.mergeByCgroupName()
	w.attributeByCgroup()
	w.attributeSticky()
	v := w.finish()
	b.sweep(snap)
	// Only the pid index is kept for the next Build: the per-position
	// slices are cheap to allocate, and a Builder holding them between
	// refreshes would add to the watch loop's resident memory for nothing.
	b.scratch = scratch{ix: b.scratch.ix}
	w.last.snap, w.last.view, w.last.reusable = snap, v, !w.stickyAncestors && !w.nestedMerged
	// The old memos are cleared now rather than when they are used again:
	// until then they would keep the processes of an older snapshot.
	clear(oldMemos)
	w.last.memos, w.last.spareMemos = b.memos, oldMemos
	b.memos, b.memoProcs = nil, nil
	b.last = w.last
	return v
}

// excluded reports whether p can never be part of a sandbox: kernel threads,
// PID 1 (on these hosts the machine's own agent, whose argv even mentions
// firecracker) and sandtop itself.
func (w *build) excluded(p *proc.Process) bool {
	return p.Kernel || p.PID <= 1 || p.PID == w.snap.Self
}

// keyOf is the Key of the sandbox a match names.
func keyOf(m Match) string {
	return string(appendKeyOf(nil, m))
}

// nameInKey is the Name inside keyOf(m), shared with it: the key is
// the rule's name, a colon, and the name.
func nameInKey(key string, m Match) string {
	if m.Rule != nil {
		return key[len(m.Rule.Name)+1:]
	}
	return key[1:]
}

// appendKeyOf appends keyOf(m) to b.
func appendKeyOf(b []byte, m Match) []byte {
	if m.Rule != nil {
		b = append(b, m.Rule.Name...)
	}
	b = append(b, ':')
	if m.Namespace != "" {
		b = append(append(b, m.Namespace...), '/')
	}
	return append(b, m.ID...)
}

func (w *build) sorted() []*Sandbox {
	out := make([]*Sandbox, 0, len(w.byID))
	for _, sb := range w.byID {
		out = append(out, sb)
	}
	slices.SortFunc(out, compareSandboxes)
	return out
}

// compareSandboxes orders sandboxes by ID, then namespace, then runtime.
func compareSandboxes(a, b *Sandbox) int {
	return cmp.Or(strings.Compare(a.ID, b.ID), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Runtime, b.Runtime))
}
