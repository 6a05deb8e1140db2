package model

import (
	"maps"
	"slices"

	"github.com/sandtop/sandtop/proc"
)

// sandbox returns the sandbox m names (its rule's runtime, its namespace
// and its ID), made if need be.
func (w *build) sandbox(m Match) *Sandbox {
	// The key is spelt in a buffer, and a string made only for a new
	// sandbox: a sandbox is named again by each of its members.
	w.keyBuf = appendKeyOf(w.keyBuf[:0], m)
	sb := w.byID[string(w.keyBuf)]
	if sb == nil {
		key := string(w.keyBuf)
		sb = &Sandbox{ID: m.ID, Namespace: m.Namespace, key: key, name: nameInKey(key, m)}
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
	self := w.snap.Proc(w.snap.Self)
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
		if self != nil && self.PGID == p.PGID {
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
