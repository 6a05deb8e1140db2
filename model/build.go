package model

import (
	"cmp"
	"iter"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"

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
	alike *alikeMemo
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
	ok  bool
	gen uint64
}

// NewBuilder returns a Builder for the given rules, tried in order.
func NewBuilder(rules Rules) *Builder {
	idx := make(map[*Rule]int, len(rules))
	rooted := map[string]bool{}
	for i, r := range rules {
		idx[r] = i
		if r != nil && !r.onlyCgroup() {
			rooted[r.Name] = true
		}
	}
	return &Builder{rules: rules, ruleIndex: idx, rooted: rooted, shared: map[sharedKey]*sharedMatch{}, vars: map[string]*sharedVars{}, claimed: map[claimKey]*claimMemo{}}
}

// Build groups a snapshot into sandboxes with a throwaway Builder.
func Build(snap *proc.Snapshot, rules Rules, prev *View) *View {
	b := NewBuilder(rules)
	b.alike = &alikeMemo{}
	return b.Build(snap, prev)
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
		work(procs, b.pre, b.alike)
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
	if b.alike != nil {
		return deref(b.alike.match(b.rules, p))
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
	if b.alike != nil {
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

// sandbox returns the sandbox m names (its rule's runtime, its namespace
// and its ID), made if need be.
func (w *build) sandbox(m Match) *Sandbox {
	// The key is spelt in a buffer, and a string made only for a new
	// sandbox: a sandbox is named again by each of its members.
	w.keyBuf = appendKeyOf(w.keyBuf[:0], m)
	sb := w.byID[string(w.keyBuf)]
	if sb == nil {
		key := string(w.keyBuf)
		sb = &Sandbox{ID: m.ID, Namespace: m.Namespace, key: key}
		if m.Rule != nil {
			sb.Runtime = m.Rule.Name
		}
		w.byID[key] = sb
		w.firstR[sb] = len(w.ruleIndex) + 1
	}
	w.addRule(sb, m)
	w.addVars(sb, m.Vars)
	return sb
}

// addRule records that m's rule recognised part of sb; the lowest-indexed
// such rule is the sandbox's Rule.
func (w *build) addRule(sb *Sandbox, m Match) {
	if m.Rule == nil {
		return
	}
	if i, ok := w.ruleIndex[m.Rule]; ok && i < w.firstR[sb] {
		w.firstR[sb] = i
		sb.Rule, sb.MatchedBy = m.Rule, m.By
	} else if sb.Rule == nil {
		sb.Rule, sb.MatchedBy = m.Rule, m.By
	}
	if !slices.Contains(w.rules[sb], m.Rule) {
		w.rules[sb] = append(w.rules[sb], m.Rule)
	}
}

// addVars adds the captures sb does not have yet: the first match to
// capture a name wins. A capture named "alias" (podman's container name)
// is another name the sandbox answers to.
//
// A match's Vars are read-only: the Builder shares one map between the
// matches of many processes (see sharedMatch), and a sticky sandbox brings
// its previous view's. So sb takes the first match's map as it is, which
// for most sandboxes is all they capture (a map per sandbox was a
// noticeable part of a steady Builder's memory), and copies it before it
// writes a capture of its own (see setVar).
func (w *build) addVars(sb *Sandbox, vars map[string]string) {
	if a := vars["alias"]; a != "" && a != sb.ID && !slices.Contains(sb.Aliases, a) {
		sb.Aliases = append(sb.Aliases, a)
	}
	if sb.Vars == nil {
		if vars == nil {
			sb.Vars = map[string]string{}
		} else {
			sb.Vars, sb.varsShared = vars, true
		}
		return
	}
	for k, v := range vars {
		if _, ok := sb.Vars[k]; !ok {
			sb.setVar(k, v)
		}
	}
}

// setVar sets a capture of sb, copying a shared map first (see addVars).
func (sb *Sandbox) setVar(k, v string) {
	if sb.varsShared {
		sb.Vars, sb.varsShared = maps.Clone(sb.Vars), false
	}
	sb.Vars[k] = v
}

// assign makes p, at position i of the snapshot, a member of sb.
func (w *build) assign(i int, p *proc.Process, sb *Sandbox, via Via) {
	if w.owner[i] == nil {
		w.attributed++
	}
	w.owner[i] = sb
	w.via[i] = via
	w.procs[sb] = w.procChunks.add(w.procs[sb], p)
}

// ownerOf returns the sandbox the process with pid is in, or nil.
func (w *build) ownerOf(pid int) *Sandbox {
	if i := w.ix.of(pid); i >= 0 {
		return w.owner[i]
	}
	return nil
}

// chunkLen is the capacity of a list started from a chunks: about the
// members of a sandbox.
const chunkLen = 16

// chunks hands out the first chunkLen slots of many short lists (the
// processes of each sandbox, of each cgroup) from one backing array, so a
// thousand sandboxes cost one allocation instead of five doublings each
// (those appends were the largest share of a steady Build's allocations).
// A list that outgrows its chunk moves out as append does; a
// chunk's capacity ends at its end, so lists never overlap.
type chunks[T any] struct {
	free []T
}

func newChunks[T any](n int) chunks[T] { return chunks[T]{free: make([]T, n)} }

func (c *chunks[T]) add(list []T, v T) []T {
	if list == nil && len(c.free) >= chunkLen {
		list, c.free = c.free[:0:chunkLen], c.free[chunkLen:]
	}
	return append(list, v)
}

// Rule 1: a process matched by a rule is in that rule's sandbox.
func (w *build) attributeByRule() {
	// The members of a sandbox are mostly neighbours in pid order, matched
	// by the same rule: while the match names the last sandbox by the same
	// rule, only its captures can add anything (see sandbox), which spares
	// four map lookups a process.
	var last *Sandbox
	var lastRule *Rule
	var weak []int
	for i, p := range w.snap.Procs {
		if w.excluded(p) {
			continue
		}
		m, ok := w.match(p)
		if !ok {
			continue
		}
		if m.Rule.NestedPIDNamespace && m.Rule.onlyCgroup() {
			weak = append(weak, i)
			continue
		}
		var sb *Sandbox
		if last != nil && m.Rule == lastRule && m.ID == last.ID && m.Namespace == last.Namespace {
			sb = last
			w.addVars(sb, m.Vars)
		} else {
			sb = w.sandbox(m)
			last, lastRule = sb, m.Rule
		}
		w.assignMatch(i, p, sb, m)
	}
	// A cgroup whose shape alone names a sandbox (containerd's /<ns>/<id>,
	// runc's /<id>) is weak evidence: a process below another runtime's
	// recognised process (an nspawn payload in <cgroup>/payload) is that
	// runtime's, and joins it through its ancestry (rule 2).
	for _, i := range weak {
		p := w.snap.Procs[i]
		m, _ := w.match(p)
		if w.underOtherRuntime(p, m.Rule.Name) {
			continue
		}
		w.assignMatch(i, p, w.sandbox(m), m)
	}
}

func (w *build) assignMatch(i int, p *proc.Process, sb *Sandbox, m Match) {
	w.assign(i, p, sb, ViaRule)
	w.matched[sb] = w.matchedChunks.add(w.matched[sb], p)
	w.by[i] = m.By
}

// underOtherRuntime reports whether an ancestor of p was recognised by a
// rule of another runtime on something other than its cgroup.
func (w *build) underOtherRuntime(p *proc.Process, runtime string) bool {
	for cur, steps := w.ix.of(p.PPID), 0; cur >= 0 && steps < maxSupervisorDepth; steps++ {
		q := w.snap.Procs[cur]
		if w.excluded(q) {
			return false
		}
		if sb := w.owner[cur]; sb != nil && w.via[cur] == ViaRule {
			if m, _ := w.match(q); m.Rule != nil && !m.Rule.onlyCgroup() {
				return m.Rule.Name != runtime
			}
		}
		cur = w.ix.of(q.PPID)
	}
	return false
}

// Rule 1b: with process_group, the matched process's whole process group
// joins (vm0 starts sudo → ip netns exec → sudo -u → firecracker as one
// group, and kills it with killpg).
func (w *build) attributeByGroup() {
	groups := map[int]*Sandbox{}
	for i, p := range w.snap.Procs {
		sb := w.owner[i]
		if sb == nil || w.via[i] != ViaRule || p.PGID <= 1 {
			continue
		}
		if m, _ := w.match(p); m.Rule == nil || !m.Rule.ProcessGroup {
			continue
		}
		// Never pull in the group sandtop runs in: a sandbox started from
		// the operator's shell would otherwise take the shell with it.
		if self := w.snap.ByPID[w.snap.Self]; self != nil && self.PGID == p.PGID {
			continue
		}
		if _, seen := groups[p.PGID]; !seen {
			groups[p.PGID] = sb
			w.last.groups[p.PGID] = sb.Key()
		}
	}
	if len(groups) == 0 {
		return
	}
	for i, p := range w.snap.Procs {
		if sb, ok := groups[p.PGID]; ok && w.owner[i] == nil && !w.excluded(p) {
			w.assign(i, p, sb, ViaGroup)
		}
	}
}

// Rule 2: an unmatched process inherits the sandbox of its nearest member
// ancestor. It returns how many processes joined.
func (w *build) attributeByAncestor() int {
	// found caches the answer for every process walked (by position; walked
	// says which are cached), so the pass is linear.
	sc := &w.scratch
	found := grown(sc.found, len(w.snap.Procs))
	walked := grown(sc.walked, len(w.snap.Procs))
	sc.found, sc.walked = found, walked
	var chain []int
	joined := 0
	for i, p := range w.snap.Procs {
		if w.owner[i] != nil || w.excluded(p) {
			continue
		}
		chain = chain[:0]
		var sb *Sandbox
		for cur, steps := i, 0; cur >= 0 && steps <= len(w.snap.Procs); steps++ {
			if walked[cur] {
				sb = found[cur]
				break
			}
			if s := w.owner[cur]; s != nil {
				sb = s
				break
			}
			q := w.snap.Procs[cur]
			if w.excluded(q) {
				break
			}
			chain = append(chain, cur)
			cur = w.ix.of(q.PPID)
		}
		for _, k := range chain {
			found[k], walked[k] = sb, true
		}
		if sb != nil {
			w.assign(i, p, sb, ViaAncestor)
			joined++
		}
	}
	return joined
}

// Rule 4: an identity that was in a sandbox in the previous view stays in
// it while it lives, even when nothing else would place it there.
func (w *build) attributeSticky() {
	if w.prev == nil {
		return
	}
	joined := false
	var olds []*proc.Process
	if w.prev.Snapshot != nil {
		olds = w.prev.Snapshot.Procs
	}
	for i, j := range sameIdentities(w.snap.Procs, olds) {
		p := w.snap.Procs[i]
		if w.owner[i] != nil || w.excluded(p) {
			continue
		}
		old := w.prev.sandboxAt(j)
		if old == nil {
			continue
		}
		sb := w.byID[old.Key()]
		if sb == nil {
			// Everything that named the sandbox is gone but this process
			// lives on: keep showing it under its old identity.
			sb = w.sandbox(Match{Rule: old.Rule, ID: old.ID, Namespace: old.Namespace, By: old.MatchedBy, Vars: old.Vars})
		}
		w.assign(i, p, sb, ViaSticky)
		joined = true
	}
	if joined && w.attributeByAncestor() > 0 {
		w.stickyAncestors = true
	}
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

// foldUnqualified folds a sandbox that a rule found without a namespace
// into the one sandbox of the same runtime and ID that has one: Docker's
// /docker/<id> cgroup says nothing of the "moby" namespace its shim's argv
// names, and a Kata QEMU's -name nothing of its shim's. With two
// namespaced candidates the namespace cannot be told, and the sandbox
// stays apart.
func (w *build) foldUnqualified() {
	var bare []*Sandbox
	for _, sb := range w.byID {
		if sb.Namespace == "" {
			bare = append(bare, sb)
		}
	}
	if len(bare) == 0 {
		return // the usual case: no index of the others needed
	}
	named := map[string][]*Sandbox{} // runtime:id -> namespaced sandboxes
	for _, sb := range w.byID {
		if sb.Namespace != "" {
			k := sb.Runtime + ":" + sb.ID
			named[k] = append(named[k], sb)
		}
	}
	for _, src := range bare {
		k := src.Runtime + ":" + src.ID
		dsts := named[k]
		if len(dsts) == 0 && w.prev != nil {
			// What named the namespace (the shim) is gone, but the
			// sandbox was seen with it: it keeps its identity.
			if old := w.prev.byKey(k); old != nil && old.Namespace != "" && old.Runtime == src.Runtime && old.ID == src.ID {
				dsts = []*Sandbox{w.sandbox(Match{Rule: src.Rule, ID: src.ID, Namespace: old.Namespace, By: src.MatchedBy})}
			}
		}
		if len(dsts) == 1 {
			w.fold(dsts[0], src)
			w.folded[k] = dsts[0]
		}
	}
}

// fold moves every member of src into dst, which has the same runtime and
// ID: one sandbox seen two ways, not an alias.
func (w *build) fold(dst, src *Sandbox) {
	if w.firstR[src] < w.firstR[dst] {
		w.firstR[dst] = w.firstR[src]
		dst.Rule, dst.MatchedBy = src.Rule, src.MatchedBy
	}
	w.merge(dst, src, false)
}
