package model

import (
	"iter"
	"slices"
	"strings"

	"github.com/sandtop/sandtop/proc"
)

// Rule 3: a process in a sandbox's dedicated cgroup is in the sandbox even
// when its ancestry no longer reaches it (a double-forked child that escaped
// to a subreaper). Which cgroups are dedicated is decided here, once, from
// rules 1 and 2; the result is kept on the Sandbox.
func (w *build) attributeByCgroup() {
	v2 := w.index(func(p *proc.Process) string { return p.Cgroup })
	v1 := w.index(func(p *proc.Process) string { return p.Freezer })
	joined := false
	for _, sb := range w.sorted() {
		find := func() {
			sb.Cgroup = w.dedicated(sb, v2, w.last.cgroups[0], func(p *proc.Process) string { return p.Cgroup })
			sb.Freezer = w.dedicated(sb, v1, w.last.cgroups[1], func(p *proc.Process) string { return p.Freezer })
		}
		find()
		if !w.byLayout(sb, sb.Cgroup) && !w.byLayout(sb, sb.Freezer) && w.adoptLayouts(sb) {
			find()
		}
		for _, dir := range []struct {
			path string
			idx  cgroupIndex
		}{{sb.Cgroup, v2}, {sb.Freezer, v1}} {
			if dir.path == "" {
				continue
			}
			for p := range dir.idx.under(dir.path) {
				if i := w.ix.of(p.PID); w.owner[i] == nil {
					w.assign(i, p, sb, ViaCgroup)
					joined = true
				}
			}
		}
	}
	if joined {
		w.attributeByAncestor()
	}
}

// cgroupIndex lists the processes of each cgroup path, with the paths
// sorted so that a subtree is one contiguous run.
type cgroupIndex struct {
	paths []string
	procs map[string][]*proc.Process
}

func (w *build) index(path func(*proc.Process) string) cgroupIndex {
	idx := cgroupIndex{procs: map[string][]*proc.Process{}}
	chunks := newChunks[*proc.Process](len(w.snap.Procs) / 10 * chunkLen)
	for _, p := range w.snap.Procs {
		if p.Kernel {
			continue
		}
		if c := path(p); c != "" {
			list, ok := idx.procs[c]
			if !ok {
				idx.paths = append(idx.paths, c)
			}
			idx.procs[c] = chunks.add(list, p)
		}
	}
	slices.Sort(idx.paths)
	return idx
}

// under yields the processes in dir and in every cgroup below it. It yields
// rather than returns a slice because the callers stop early: a candidate
// cgroup high in the tree (the common ancestor of a shim in containerd's
// cgroup and its container's scope) can hold every process of the host,
// and copying them for each sandbox made Build quadratic (~900 MB
// allocated per Build at 1,000 processes).
func (idx cgroupIndex) under(dir string) iter.Seq[*proc.Process] {
	return func(yield func(*proc.Process) bool) {
		for _, p := range idx.procs[dir] {
			if !yield(p) {
				return
			}
		}
		prefix := dir + "/"
		if dir == "/" {
			prefix = "/"
		}
		i, _ := slices.BinarySearch(idx.paths, prefix)
		for ; i < len(idx.paths) && strings.HasPrefix(idx.paths[i], prefix); i++ {
			if idx.paths[i] == dir {
				continue
			}
			for _, p := range idx.procs[idx.paths[i]] {
				if !yield(p) {
					return
				}
			}
		}
	}
}

// dedicated returns the cgroup that belongs to sb alone, or "". A dedicated
// cgroup must be provably the sandbox's: its path names the sandbox (the
// ID as a component or token, or a cgroup rule of the sandbox's runtime
// recognises this very sandbox there), and a systemd slice only by a
// rule's layout (a pod's slice), never by a token. The candidates, the
// first provable one that nothing foreign lives in winning:
//   - the deepest cgroup holding every member, when every member's
//     cgroup names the sandbox or it does itself;
//   - otherwise the deepest cgroup holding the members whose cgroup names
//     the sandbox (a container's scope, while its shim lives in
//     containerd's cgroup);
//   - the deepest cgroup holding the members whose cgroup a rule's layout
//     recognises: podman's libpod-<id>.scope (with crun
//     libpod-<id>.scope/container) while conmon sits beside it in
//     libpod-conmon-<id>.scope, which names the ID too; the two have only
//     machine.slice in common, which holds every machine.
//
// The winner is widened to the widest cgroup above it that a layout still
// recognises (see widen).
//
// A candidate is dedicated when nothing in it (or below) belongs to
// another sandbox or is a process sandtop must never touch; any other
// process in it is a stray the cgroup claims, as it names the sandbox.
// A cgroup that holds only this sandbox's processes at this moment but does
// not name it (a shared parent, a slice, the caller's service) is never
// dedicated: cgroup.kill there would kill whatever else starts in it.
//
// Every candidate is added to asked: what lives in them decides the
// answer, so a later change there rules out reuse.
func (w *build) dedicated(sb *Sandbox, idx cgroupIndex, asked map[string]struct{}, path func(*proc.Process) string) string {
	var all, named, laid string
	// The members of a sandbox share a handful of cgroups, and claims runs
	// the rules' cgroup regexps: ask it once per distinct path (asked per
	// member, it was a third of Build at 1,000 processes).
	type memo struct {
		dir   string
		claim claim
	}
	var memos []memo
	for _, p := range w.procs[sb] {
		c := path(p)
		// A zombie has already left its cgroup (the kernel unlinks it in
		// cgroup_exit, before it is reaped); what /proc says of its cgroup
		// says nothing about where the live members are.
		if c == "" || p.Zombie() {
			continue
		}
		all = commonCgroup(all, c)
		i := slices.IndexFunc(memos, func(m memo) bool { return m.dir == c })
		if i < 0 {
			memos = append(memos, memo{c, w.claims(sb, c)})
			i = len(memos) - 1
		}
		if memos[i].claim >= claimByName {
			named = commonCgroup(named, c)
		}
		if memos[i].claim == claimByLayout {
			laid = commonCgroup(laid, c)
		}
	}
	var cands []string
	if named == "" || named == all {
		cands = append(cands, all)
	} else {
		// Some members sit in a cgroup that names the sandbox and the
		// common one of them all does not: that common cgroup is a parent
		// the runtime shares between its sandboxes (podman's
		// libpod_parent, holding conmon and libpod-<id>), however empty of
		// others it is at this moment. It is still asked, so that reuse
		// notices what lives there.
		asked[all] = struct{}{}
	}
	cands = append(cands, named, laid)
	for i, cand := range cands {
		if cand == "" || cand == "/" || slices.Contains(cands[:i], cand) {
			continue
		}
		asked[cand] = struct{}{}
		if w.owns(sb, idx, cand) {
			return w.widen(sb, idx, asked, cand)
		}
	}
	return ""
}

// widen returns the widest cgroup above cand that a rule's layout still
// recognises as sb's and that nothing foreign lives in: the unit the
// runtime made for the sandbox, not the sub-cgroup its processes happen to
// sit in (machine.slice/machine-m1.scope, not its payload; podman's
// libpod-<id>.scope, not crun's container below it).
func (w *build) widen(sb *Sandbox, idx cgroupIndex, asked map[string]struct{}, cand string) string {
	for {
		up := cand[:strings.LastIndexByte(cand, '/')]
		if up == "" || w.claims(sb, up) != claimByLayout {
			return cand
		}
		asked[up] = struct{}{}
		if !w.owns(sb, idx, up) {
			return cand
		}
		cand = up
	}
}

// owns reports whether cand may be treated as sb's own cgroup: it names sb
// and nothing of another sandbox, and nothing sandtop must never touch,
// lives in it or below. A pool slot names no sandbox: it is sb's only
// while every process in it is sb's, since a stray there may be anyone's.
func (w *build) owns(sb *Sandbox, idx cgroupIndex, cand string) bool {
	if cand == "" || cand == "/" {
		return false
	}
	claim := w.claims(sb, cand)
	if claim == claimNone {
		return false
	}
	for p := range idx.under(cand) {
		if p.Zombie() {
			continue // gone from the cgroup already: cgroup.kill cannot reach it
		}
		if w.excluded(p) {
			return false
		}
		switch owner := w.ownerOf(p.PID); {
		case owner == sb:
		case owner != nil, claim == claimBySlot:
			return false
		}
	}
	return true
}

// claim is how a cgroup path names a sandbox.
type claim uint8

const (
	claimNone claim = iota
	// claimBySlot: a rule's own_cgroup recognises the path as a cgroup its
	// runtime gives one sandbox at a time (a pool slot), named by no ID.
	claimBySlot
	// claimByName: the sandbox's ID (with its namespace) is part of the
	// path.
	claimByName
	// claimByLayout: a cgroup rule of the sandbox's runtime recognises this
	// very sandbox in the path, a layout a preset (or the user's rule)
	// knows.
	claimByLayout
)

// claims says how dir names sb (see claimedBy) by sb's rules.
func (w *build) claims(sb *Sandbox, dir string) claim { return w.claimsBy(sb, dir, w.rules[sb]) }

// claimsBy says how dir names sb by the given rules. Answers are
// remembered across builds (the regexps were a tenth of a steady Build),
// except by a one-off Build, which has no next one (and asks each
// question about once: see dedicated).
func (w *build) claimsBy(sb *Sandbox, dir string, rules []*Rule) claim {
	if w.matchInputs != nil {
		return claimedBy(rules, sb, dir)
	}
	key := claimKey{id: sb.Key(), dir: dir}
	for _, r := range rules {
		i, ok := w.ruleIndex[r]
		if !ok || i >= 64 {
			return claimedBy(rules, sb, dir)
		}
		key.rules |= 1 << i
	}
	if c := w.claimed[key]; c != nil {
		c.gen = w.gen
		return c.claim
	}
	c := claimedBy(rules, sb, dir)
	w.claimed[key] = &claimMemo{claim: c, gen: w.gen}
	return c
}

// adoptLayouts adds to sb's rules each layout (a rule that recognises a
// process by its cgroup alone) that recognises sb itself in the cgroup of
// a member another rule found. Such a member says nothing of where it
// lives: systemd-nspawn's payload, until it execs, is a fork of nspawn
// with nspawn's argv, yet machined has made it machine-<name>.scope
// already, which names the machine as surely as it does once the payload
// has exec'd and the machine layout finds it there. Only the rules a
// member matched can make a cgroup dedicated (see dedicated), so without
// this the same machine had a dedicated cgroup or none by the moment. It
// is asked only when sb's own rules found no layout, and reports whether
// it added a rule.
func (w *build) adoptLayouts(sb *Sandbox) (adopted bool) {
	// A layout that recognises sb spells its ID in the path, perhaps
	// transformed (see IDTransform), which keeps its letters and digits:
	// a path without its longest run of them is asked nothing (the
	// regexps made a one-off Build half as slow again).
	run := longestAlnumRun(sb.ID)
	var seen []string
	for _, p := range w.procs[sb] {
		i := w.ix.of(p.PID)
		if i < 0 || w.by[i] == "" || w.by[i] == ByCgroup || p.Zombie() {
			continue
		}
		for _, dir := range []string{p.Cgroup, p.Freezer} {
			if dir == "" || !strings.Contains(dir, run) || slices.Contains(seen, dir) {
				continue
			}
			seen = append(seen, dir)
			for _, r := range w.layouts {
				if !slices.Contains(w.rules[sb], r) && w.claimsBy(sb, dir, []*Rule{r}) == claimByLayout {
					w.rules[sb] = append(w.rules[sb], r)
					adopted = true
				}
			}
		}
	}
	return adopted
}

// byLayout reports whether a rule of sb's recognises sb in dir.
func (w *build) byLayout(sb *Sandbox, dir string) bool {
	return dir != "" && w.claims(sb, dir) == claimByLayout
}

// longestAlnumRun returns the longest run of ASCII letters and digits in
// s (the first of equals).
func longestAlnumRun(s string) string {
	best, start := "", -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9') {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start > len(best) {
			best = s[start:i]
		}
		start = -1
	}
	return best
}

// Names reports whether the cgroup path dir provably belongs to the
// sandbox, by the evidence a dedicated cgroup is judged by: a cgroup
// matcher of one of its rules recognises this very sandbox in it, or its
// ID (with its namespace) is part of the path. A process in such a cgroup
// started inside the sandbox, wherever its ancestry now leads.
func (s *Sandbox) Names(dir string) bool { return claimedBy(s.rules, s, dir) >= claimByName }

// claimedBy says how dir names sb. A rule's cgroup matcher must capture
// this very sandbox's ID there, not merely match a path of its shape
// (another container's /docker/<id>, or any path below a prefix). A
// systemd slice holds units of its own: only a layout names one (a
// Kubernetes pod's slice), never a token that happens to be the ID.
func claimedBy(rules []*Rule, sb *Sandbox, dir string) claim {
	for _, r := range rules {
		if r.Cgroup == nil || !r.Cgroup.MatchString(dir) {
			continue
		}
		c := captures{}
		c.add(ByCgroup, r.Cgroup, dir)
		if c.id != "" && r.IDTransform.Apply(c.id) == sb.ID && (c.vars["ns"] == "" || c.vars["ns"] == sb.Namespace) {
			return claimByLayout
		}
	}
	if !strings.HasSuffix(dir, ".slice") && namesInPath(dir, sb.Namespace, sb.ID) {
		return claimByName
	}
	for _, r := range rules {
		if r.OwnCgroup != nil && r.OwnCgroup.MatchString(dir) {
			return claimBySlot
		}
	}
	return claimNone
}

// namesInPath reports whether a cgroup path names the sandbox: its
// namespace and ID as two consecutive components (containerd's /<ns>/<id>),
// a component that is the ID, or, for an ID long enough not to turn up by
// accident, a component holding the ID as a whole token
// (docker-<id>.scope, libpod-<id>). The evidence is the path's structure,
// so a short ID counts as much as a long one.
func namesInPath(dir, ns, id string) bool {
	parent := ""
	for part := range strings.SplitSeq(dir, "/") {
		switch {
		case part == id && (ns == "" || parent == ns || len(id) >= minIDInPath):
			return true
		case len(id) >= minIDInPath && containsToken(part, id):
			return true
		}
		parent = part
	}
	return false
}

// containsToken reports whether s holds tok with a cgroup separator or an
// end of s on each side (tok may hold separators itself: a UUID).
func containsToken(s, tok string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], tok)
		if i < 0 {
			return false
		}
		start, end := off+i, off+i+len(tok)
		if (start == 0 || isCgroupSeparator(rune(s[start-1]))) && (end == len(s) || isCgroupSeparator(rune(s[end]))) {
			return true
		}
		off = start + 1
	}
}

// mergeByCgroupName folds a sandbox into another whose member cgroups carry
// its ID as a whole token. A Kubernetes pod is found by its pod UID (the
// kubepods…pod<uid> cgroup) while its shim is found by the pod sandbox ID,
// and the pause container's scope, cri-containerd-<sandbox id>.scope, is
// what ties the two together: one pod, one sandbox.
func (w *build) mergeByCgroupName() {
	// The token is a bare ID: it names a sandbox only when one sandbox
	// has that ID (two namespaces holding it leave the token ambiguous).
	byID := make(map[string]*Sandbox, len(w.byID))
	for _, sb := range w.byID {
		if _, dup := byID[sb.ID]; dup {
			byID[sb.ID] = nil
		} else {
			byID[sb.ID] = sb
		}
	}
	var homes map[string]*Sandbox
	for _, dst := range w.sorted() {
		if w.byID[dst.Key()] != dst {
			continue // merged away already
		}
		// A sandbox's members share a few cgroups: a short list beats a map
		// (a map and a token slice per sandbox were a tenth of a full
		// Build's allocations at 10,000 processes).
		var seen []string
		for _, p := range w.procs[dst] {
			if p.Cgroup == "" || slices.Contains(seen, p.Cgroup) {
				continue
			}
			// A process that only claims dst (in its argv) while it
			// lives where a cgroup rule found another sandbox cannot
			// pull that sandbox into dst: its cgroup speaks for the
			// other one.
			if i := w.ix.of(p.PID); i >= 0 && w.by[i] != ByCgroup && !namesInPath(p.Cgroup, dst.Namespace, dst.ID) {
				if homes == nil {
					homes = w.cgroupHomes(true)
				}
				if h, ok := homes[p.Cgroup]; ok && h != dst {
					continue
				}
			}
			seen = append(seen, p.Cgroup)
			for tok := range strings.FieldsFuncSeq(p.Cgroup, isCgroupSeparator) {
				src := byID[tok]
				if src == nil || src == dst || len(tok) < minIDInPath || w.byID[src.Key()] != src ||
					(src.Namespace != "" && dst.Namespace != "" && src.Namespace != dst.Namespace) {
					continue
				}
				w.merge(dst, src, true)
			}
		}
	}
}

func isCgroupSeparator(r rune) bool {
	return r == '/' || r == '-' || r == '.' || r == '_' || r == ':' || r == '@'
}

// merge moves every member of src into dst; dst keeps its identity, and
// with alias remembers src's ID as an alias.
func (w *build) merge(dst, src *Sandbox, alias bool) {
	for _, p := range w.procs[src] {
		w.owner[w.ix.of(p.PID)] = dst
	}
	w.procs[dst] = append(w.procs[dst], w.procs[src]...)
	w.matched[dst] = append(w.matched[dst], w.matched[src]...)
	for _, r := range w.rules[src] {
		if !slices.Contains(w.rules[dst], r) {
			w.rules[dst] = append(w.rules[dst], r)
		}
	}
	for k, v := range src.Vars {
		if _, ok := dst.Vars[k]; !ok {
			dst.setVar(k, v)
		}
	}
	if alias {
		dst.Aliases = append(dst.Aliases, src.ID)
	}
	dst.Aliases = append(dst.Aliases, src.Aliases...)
	delete(w.byID, src.Key())
	delete(w.procs, src)
}

// commonCgroup returns the deepest cgroup that contains both paths; ""
// stands for no path yet.
func commonCgroup(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	for a != b {
		if len(a) > len(b) {
			a, b = b, a
		}
		if strings.HasPrefix(b, a) && (a == "/" || b[len(a)] == '/') {
			return a
		}
		i := strings.LastIndexByte(b, '/')
		if i <= 0 {
			return "/"
		}
		b = b[:i]
	}
	return a
}
