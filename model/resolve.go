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
		return nil, fmt.Errorf("%w: no sandbox ID starts with %q%s", ErrResolve, arg, candidates(v.Sandboxes))
	default:
		return nil, fmt.Errorf("%w: %q is ambiguous%s", ErrResolve, arg, candidates(hits))
	}
}

func candidates(sbs []*Sandbox) string {
	if len(sbs) == 0 {
		return " (no sandboxes on this host)"
	}
	var b strings.Builder
	b.WriteString("; candidates:")
	for _, sb := range sbs {
		fmt.Fprintf(&b, "\n  %s  %s", sb.ID, sb.Runtime)
	}
	return b.String()
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
