package hostview

import (
	"errors"
	"hash/maphash"
	"path"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// DefaultRewalk is how often a Finder walks the cgroup hierarchy when
// nothing else asks it to: the longest a cgroup made empty, with no
// process ever in it, waits to be shown as a leftover.
const DefaultRewalk = 10 * time.Second

// Finder is WithLeftovers for a loop of refreshes (the live screen).
//
// Walking the cgroup hierarchy is most of what a leftover search costs:
// a directory open, two getdents and a close per cgroup, each listing some
// fifty control files. Profiled at 3,000 processes it was a quarter of the
// screen's CPU per refresh, more than listing /proc. The hierarchy seldom
// changes, and when a sandbox starts, moves or ends the scan sees it: the
// set of cgroups its processes live in changes. So a Finder walks when
// that set differs from the one at its last walk, or when rewalk has
// passed since; in between it rechecks the cgroups the last walk accepted,
// reading the state only of those no process in the scan vouches for (the
// empty ones, which are the leftovers). An empty cgroup is thus always
// judged by a read of its own state, never by the cache.
type Finder struct {
	lo     *model.Leftovers
	rewalk time.Duration
	seed   maphash.Seed

	// What the last walk found, when, and the cgroups the scan then had
	// processes in (their fingerprint, and every one of them with its
	// ancestors).
	dirs   []proc.CgroupDir
	walked time.Time
	print  uint64
	busy   map[string]bool
	mounts proc.Mounts
}

// NewFinder returns a Finder that walks at least every rewalk
// (DefaultRewalk when 0).
func NewFinder(lo *model.Leftovers, rewalk time.Duration) *Finder {
	if rewalk <= 0 {
		rewalk = DefaultRewalk
	}
	return &Finder{lo: lo, rewalk: rewalk, seed: maphash.MakeSeed()}
}

// Add is WithLeftovers(lo, v), walking the cgroup hierarchy only when it
// must (see Finder).
func (f *Finder) Add(v *model.View) (*model.View, error) {
	globs := f.lo.Globs(v)
	var patterns []string
	for _, g := range globs {
		if g.IsPath() {
			patterns = append(patterns, g.Pattern)
		}
	}
	paths, gerr := proc.Glob(patterns)
	var cgroups []proc.CgroupDir
	var cerr error
	if len(f.lo.CgroupRules()) > 0 {
		cgroups, cerr = f.cgroups(v.Snapshot)
	}
	found := model.Found{Globs: globs, Paths: paths, Cgroups: cgroups}
	kerr := findKinds(&found, v)
	return f.lo.Apply(v, found), errors.Join(gerr, cerr, kerr)
}

func (f *Finder) cgroups(snap *proc.Snapshot) ([]proc.CgroupDir, error) {
	held := snap.Cgroups
	if snap.Mounts.Unified == "" {
		held = snap.Freezers // ListCgroups walks the v1 freezer then
	}
	fp := f.fingerprint(held)
	if f.walked.IsZero() || fp != f.print || snap.Mounts != f.mounts || snap.Time.Sub(f.walked) >= f.rewalk {
		dirs, err := proc.ListCgroups(snap.Mounts, f.lo.WantCgroup)
		if err != nil {
			// A walk cut short is no basis for the next refreshes.
			f.walked = time.Time{}
			return dirs, err
		}
		f.dirs, f.walked, f.print, f.mounts = dirs, snap.Time, fp, snap.Mounts
		f.busy = withAncestors(held)
		return dirs, nil
	}
	f.dirs = proc.RecheckCgroups(f.dirs, func(p string) bool { return f.busy[p] })
	return f.dirs, nil
}

// fingerprint sums a hash of every cgroup path in held: equal sets give
// equal sums, whatever the map's order.
func (f *Finder) fingerprint(held map[string]proc.CgroupState) uint64 {
	sum := uint64(len(held))
	for p := range held {
		sum += maphash.String(f.seed, p)
	}
	return sum
}

// withAncestors is every cgroup in held and every cgroup above one.
func withAncestors(held map[string]proc.CgroupState) map[string]bool {
	out := make(map[string]bool, 2*len(held))
	for p := range held {
		for p != "/" && p != "." && p != "" && !out[p] {
			out[p] = true
			p = path.Dir(p)
		}
	}
	return out
}
