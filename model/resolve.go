package model

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sandtop/sandtop/model/words"
)

// MinShortID is the shortest prefix used when displaying an ID.
const MinShortID = 12

// ErrResolve is wrapped by every error Resolve returns.
var ErrResolve = errors.New("cannot resolve sandbox")

// Resolve finds the sandbox named by its Key ("runtime:ns/id"), its Name
// ("ns/id"), its ID, an alias, or a unique prefix of an ID, an alias or a
// Name, or a pod's container by its ID or a unique prefix of it (as a
// sandbox of its own: see Sandbox.Pod), as `runner kill` does in the vm0
// seed: an empty argument, an unknown name and an ambiguous one (an ID
// that two namespaces or two runtimes share, a prefix of several) are
// errors that name the candidates. A runtime's name, a namespace,
// "runtime:" or "ns/" alone never names a sandbox, even where one sandbox
// of it is all there is: it is an error that lists what it could mean
// (see HasNamePrefix).
func (v *View) Resolve(arg string) (*Sandbox, error) {
	if strings.TrimSpace(arg) == "" {
		return nil, fmt.Errorf("%w: empty sandbox ID", ErrResolve)
	}
	if sb := v.byKey(arg); sb != nil {
		return sb, nil
	}
	hits := v.named(arg)
	if len(hits) == 0 {
		for _, sb := range v.Sandboxes {
			if slices.Contains(sb.Aliases, arg) {
				hits = append(hits, sb)
			}
		}
	}
	if len(hits) == 0 {
		hits = v.containersNamed(arg, false)
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
	default:
		return nil, fmt.Errorf("%w: %q names %d sandboxes; say which%s", ErrResolve, arg, len(hits), candidates(v, hits))
	}
	if err := v.notASandboxName(arg); err != nil {
		return nil, err
	}
	for _, sb := range v.Sandboxes {
		if sb.HasNamePrefix(arg, strings.HasPrefix) {
			hits = append(hits, sb)
		}
	}
	hits = append(hits, v.containersNamed(arg, true)...)
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		if len(v.Sandboxes) == 0 {
			return nil, fmt.Errorf("%w: no sandbox ID starts with %q (no sandboxes on this host)", ErrResolve, arg)
		}
		return nil, fmt.Errorf("%w: no sandbox ID starts with %q; %s on this host, the nearest:%s",
			ErrResolve, arg, countSandboxes(len(v.Sandboxes)), list(v, nearest(v.Sandboxes, arg)))
	default:
		return nil, fmt.Errorf("%w: %q is ambiguous%s", ErrResolve, arg, candidates(v, hits))
	}
}

// HasNamePrefix reports whether prefix is the start of a name the sandbox
// answers to: its ID or an alias; its Name ("ns/id") once the prefix holds
// the namespace, its slash and part of the ID; or either of these after
// "runtime:" with the sandbox's runtime. A runtime's or a namespace's name
// is the start of many Keys and Names, and naming a whole runtime is never
// naming one of its sandboxes: with an empty $ID, "vm0:$ID" must not be
// the only vm0 VM. hasPrefix is strings.HasPrefix, or a case-folding one
// for the screen's filter.
func (s *Sandbox) HasNamePrefix(prefix string, hasPrefix func(s, prefix string) bool) bool {
	if rt, rest, ok := strings.Cut(prefix, ":"); ok && len(rt) == len(s.Runtime) && hasPrefix(s.Runtime, rt) && s.hasIDPrefix(rest, hasPrefix) {
		return true
	}
	return s.hasIDPrefix(prefix, hasPrefix)
}

func (s *Sandbox) hasIDPrefix(prefix string, hasPrefix func(s, prefix string) bool) bool {
	if prefix == "" {
		return false
	}
	if hasPrefix(s.ID, prefix) {
		return true
	}
	for _, a := range s.Aliases {
		if hasPrefix(a, prefix) {
			return true
		}
	}
	return s.Namespace != "" && len(prefix) > len(s.Namespace)+1 && hasPrefix(s.Name(), prefix)
}

// notASandboxName returns an error when arg, which names no sandbox
// exactly, is a runtime's name or a namespace, alone or followed by its
// separator ("vm0", "vm0:", "moby", "moby/", "docker:moby/"): words that
// name many sandboxes at once, however few are running. The error lists
// the sandboxes it could mean.
func (v *View) notASandboxName(arg string) error {
	rt, word, qualified := strings.Cut(arg, ":")
	if !qualified || !v.isRuntime(rt) {
		rt, word, qualified = "", arg, false
	}
	ns, slash := strings.CutSuffix(word, "/")
	var what string
	switch {
	case qualified && word == "":
		what = "a runtime"
	case !qualified && !slash && v.isRuntime(word):
		what, rt = "a runtime", word
	case v.isNamespace(ns):
		what = "a namespace"
	case slash && !strings.Contains(ns, "/"):
		return fmt.Errorf("%w: %q is not a sandbox: give an ID (or a unique prefix of one) after the %q", ErrResolve, arg, "/")
	default:
		return nil
	}
	var of []*Sandbox
	for _, sb := range v.Sandboxes {
		if (rt == "" || sb.Runtime == rt) && (what == "a runtime" || sb.Namespace == ns) {
			of = append(of, sb)
		}
	}
	msg := fmt.Sprintf("%q is %s, not a sandbox: name one sandbox by its ID or a prefix of it", arg, what)
	if len(of) == 0 {
		return fmt.Errorf("%w: %s (no sandbox of it on this host)", ErrResolve, msg)
	}
	return fmt.Errorf("%w: %s; %s of it on this host:%s", ErrResolve, msg, countSandboxes(len(of)), list(v, of))
}

// isNamespace reports whether name is the namespace of a sandbox of the
// view.
func (v *View) isNamespace(name string) bool {
	return name != "" && slices.ContainsFunc(v.Sandboxes, func(sb *Sandbox) bool { return sb.Namespace == name })
}

// isRuntime reports whether name is the runtime of a sandbox of the view
// or of a preset.
func (v *View) isRuntime(name string) bool {
	for _, sb := range v.Sandboxes {
		if sb.Runtime == name {
			return true
		}
	}
	return slices.ContainsFunc(presets(), func(r *Rule) bool { return r.Name == name })
}

// maxCandidates bounds the sandboxes an error lists: a big host has
// thousands.
const maxCandidates = 10

func countSandboxes(n int) string { return words.Count(n, "sandbox", "sandboxes") }

// candidates lists sandboxes by the name that tells each apart: its Name,
// or its Key when another sandbox has the same Name.
func candidates(v *View, sbs []*Sandbox) string {
	if len(sbs) == 0 {
		return " (no sandboxes on this host)"
	}
	return "; candidates:" + list(v, sbs)
}

// list names at most maxCandidates sandboxes, one a line, and says how
// many more there are.
func list(v *View, sbs []*Sandbox) string {
	var b strings.Builder
	for _, sb := range sbs[:min(len(sbs), maxCandidates)] {
		fmt.Fprintf(&b, "\n  %s  %s", Printable(v.FullName(sb)), Printable(sb.Runtime))
	}
	if n := len(sbs) - maxCandidates; n > 0 {
		fmt.Fprintf(&b, "\n  … and %d more", n)
	}
	return b.String()
}

// nearest orders the sandboxes by how near their name is to arg, a
// mistyped ID or prefix: the longest shared prefix (of the ID or the
// Name) first, then the smallest edit distance between arg and as much of
// the ID, then by ID; it keeps the first maxCandidates.
func nearest(sbs []*Sandbox, arg string) []*Sandbox {
	type scored struct {
		sb           *Sandbox
		prefix, dist int
	}
	all := make([]scored, len(sbs))
	for i, sb := range sbs {
		prefix := max(commonPrefix(sb.ID, arg), commonPrefix(sb.Name(), arg))
		all[i] = scored{sb, prefix, editDistance(arg, sb.ID[:min(len(sb.ID), len(arg))])}
	}
	slices.SortFunc(all, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.prefix, a.prefix), cmp.Compare(a.dist, b.dist), strings.Compare(a.sb.ID, b.sb.ID))
	})
	out := make([]*Sandbox, 0, maxCandidates)
	for _, s := range all[:min(len(all), maxCandidates)] {
		out = append(out, s.sb)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes (IDs
// are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// FullName is the shortest name that Resolve takes for exactly sb: its
// Name, or its Key when another sandbox of the view has the same Name
// (two runtimes that picked the same ID).
func (v *View) FullName(sb *Sandbox) string {
	for _, o := range v.Sandboxes {
		if o != sb && o.Name() == sb.Name() {
			return sb.Key()
		}
	}
	if hits := v.named(sb.Name()); len(hits) > 1 {
		return sb.Key()
	}
	return sb.Name()
}

// ShortNames maps each sandbox to the name list and the live screen show:
// the namespace, if any, and the ID shortened to its shortest unique prefix
// of at least minLen characters ("team-a/web-frontend", "moby/3f2a1b4c5d6e"),
// with the runtime in front where two sandboxes would read the same.
// Resolve accepts every such name.
func (v *View) ShortNames(minLen int) map[*Sandbox]string {
	ids := make([]string, len(v.Sandboxes))
	for i, sb := range v.Sandboxes {
		ids[i] = sb.ID
	}
	short := ShortIDs(ids, minLen)
	out := make(map[*Sandbox]string, len(v.Sandboxes))
	shown := make(map[string]int, len(v.Sandboxes))
	perID := make(map[string]int, len(v.Sandboxes))
	for _, sb := range v.Sandboxes {
		out[sb] = qualify(sb.Namespace, short[sb.ID])
		shown[out[sb]]++
		perID[sb.ID]++
	}
	for _, sb := range v.Sandboxes {
		// A bare ID that another sandbox also has would name both.
		if shown[out[sb]] > 1 || (sb.Namespace == "" && perID[sb.ID] > 1) {
			out[sb] = sb.Runtime + ":" + out[sb]
		}
	}
	return out
}

// ShortIDs maps each ID to its shortest prefix that is unique among ids and
// at least minLen characters long (the whole ID when it is shorter).
func ShortIDs(ids []string, minLen int) map[string]string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	out := make(map[string]string, len(sorted))
	for i, id := range sorted {
		// In sorted order, the longest prefix shared with any other ID
		// is shared with a neighbour.
		n := 0
		if i > 0 {
			n = max(n, commonPrefix(id, sorted[i-1]))
		}
		if i+1 < len(sorted) {
			n = max(n, commonPrefix(id, sorted[i+1]))
		}
		out[id] = id[:min(len(id), max(minLen, n+1))]
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
