package model

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MinShortID is the shortest prefix used when displaying an ID.
const MinShortID = 12

// ErrResolve is wrapped by every error Resolve returns.
var ErrResolve = errors.New("cannot resolve sandbox")

// Resolve finds the sandbox named by a full ID or by a unique prefix of one,
// as `runner kill` does in the vm0 seed: an empty argument, an unknown ID and
// an ambiguous prefix are errors that name the candidates.
func (v *View) Resolve(arg string) (*Sandbox, error) {
	if strings.TrimSpace(arg) == "" {
		return nil, fmt.Errorf("%w: empty sandbox ID", ErrResolve)
	}
	if sb := v.Sandbox(arg); sb != nil {
		return sb, nil
	}
	for _, sb := range v.Sandboxes {
		if slices.Contains(sb.Aliases, arg) {
			return sb, nil
		}
	}
	var hits []*Sandbox
	for _, sb := range v.Sandboxes {
		if strings.HasPrefix(sb.ID, arg) {
			hits = append(hits, sb)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		if len(v.Sandboxes) == 0 {
			return nil, fmt.Errorf("%w: no sandbox ID starts with %q (no sandboxes on this host)", ErrResolve, arg)
		}
		return nil, fmt.Errorf("%w: no sandbox ID starts with %q; %s on this host, the nearest:%s",
			ErrResolve, arg, countSandboxes(len(v.Sandboxes)), candidates(nearest(v.Sandboxes, arg)))
	default:
		return nil, fmt.Errorf("%w: %q is ambiguous; candidates:%s", ErrResolve, arg, candidates(hits))
	}
}

// maxCandidates bounds the IDs an error lists: a big host has thousands.
const maxCandidates = 10

func countSandboxes(n int) string {
	if n == 1 {
		return "1 sandbox"
	}
	return fmt.Sprintf("%d sandboxes", n)
}

func candidates(sbs []*Sandbox) string {
	var b strings.Builder
	for _, sb := range sbs[:min(len(sbs), maxCandidates)] {
		fmt.Fprintf(&b, "\n  %s  %s", sb.ID, sb.Runtime)
	}
	if n := len(sbs) - maxCandidates; n > 0 {
		fmt.Fprintf(&b, "\n  … and %d more", n)
	}
	return b.String()
}

// nearest orders the sandboxes by how near their ID is to arg, a mistyped
// ID or prefix: the longest shared prefix first, then the smallest edit
// distance between arg and as much of the ID, then by ID.
func nearest(sbs []*Sandbox, arg string) []*Sandbox {
	type scored struct {
		sb           *Sandbox
		prefix, dist int
	}
	all := make([]scored, len(sbs))
	for i, sb := range sbs {
		all[i] = scored{sb, commonPrefix(sb.ID, arg), editDistance(arg, sb.ID[:min(len(sb.ID), len(arg))])}
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
