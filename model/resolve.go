package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MinShortID is the shortest prefix used when displaying an ID.
const MinShortID = 12

// ErrResolve is wrapped by every error Resolve returns.
var ErrResolve = errors.New("cannot resolve sandbox")

// Resolve finds the sandbox named by its Key ("runtime:ns/id"), its Name
// ("ns/id"), its ID, an alias, or a unique prefix of any of these, as
// `runner kill` does in the vm0 seed: an empty argument, an unknown name
// and an ambiguous one (an ID that two namespaces or two runtimes share,
// a prefix of several) are errors that name the candidates.
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
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
	default:
		return nil, fmt.Errorf("%w: %q names %d sandboxes; say which%s", ErrResolve, arg, len(hits), candidates(v, hits))
	}
	for _, sb := range v.Sandboxes {
		if strings.HasPrefix(sb.ID, arg) || strings.HasPrefix(sb.Name(), arg) || strings.HasPrefix(sb.Key(), arg) {
			hits = append(hits, sb)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return nil, fmt.Errorf("%w: no sandbox ID starts with %q%s", ErrResolve, arg, candidates(v, v.Sandboxes))
	default:
		return nil, fmt.Errorf("%w: %q is ambiguous%s", ErrResolve, arg, candidates(v, hits))
	}
}

// candidates lists sandboxes by the name that tells each apart: its Name,
// or its Key when another sandbox has the same Name.
func candidates(v *View, sbs []*Sandbox) string {
	if len(sbs) == 0 {
		return " (no sandboxes on this host)"
	}
	var b strings.Builder
	b.WriteString("; candidates:")
	for _, sb := range sbs {
		fmt.Fprintf(&b, "\n  %s  %s", v.FullName(sb), sb.Runtime)
	}
	return b.String()
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
