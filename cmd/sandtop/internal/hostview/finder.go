package hostview

import (
	"errors"
	"hash/maphash"
	"path"
	"strings"
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
// passed since. A walk, and in between a recheck of the cgroups the last
// walk accepted, reads the state only of those no process in the scan
// vouches for (the empty ones, which are the leftovers). An empty cgroup
// is thus always judged by a read of its own state, never by the cache.
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

	// ahead is the walk WalkAhead started, until Add settles it.
	ahead *aheadWalk
}

// aheadWalk is a cgroup walk started before the view is built: the
// snapshot it walks for and, once done is closed, what it found.
type aheadWalk struct {
	snap *proc.Snapshot
	done chan struct{}
	dirs []proc.CgroupDir
	busy map[string]bool
	err  error
}

// NewFinder returns a Finder that walks at least every rewalk
// (DefaultRewalk when 0).
func NewFinder(lo *model.Leftovers, rewalk time.Duration) *Finder {
	if rewalk <= 0 {
		rewalk = DefaultRewalk
	}
	return &Finder{lo: lo, rewalk: rewalk, seed: maphash.MakeSeed()}
}

// WalkAhead starts the walk of the cgroup hierarchy for snap while the
// caller builds its view from it, a one-shot command's Build, which the
// walk would otherwise wait for: whether a cgroup in a shape as loose as
// containerd's /<namespace>/<id> is a leftover depends on the sandboxes
// the view finds alive. The walk takes such a cgroup and descends below
// it as well (Leftovers.WantCgroupAhead), and Add, given the view built
// from snap, settles it as a walk after the view would have.
func (f *Finder) WalkAhead(snap *proc.Snapshot) {
	if len(f.lo.CgroupRules()) == 0 {
		return
	}
	a := &aheadWalk{snap: snap, done: make(chan struct{})}
	f.ahead = a
	go func() {
		defer close(a.done)
		a.busy = withAncestors(heldCgroups(snap))
		want := func(p string) (take, descend bool) {
			take, sure := f.lo.WantCgroupAhead(p)
			return take, take && !sure
		}
		a.dirs, a.err = proc.ListCgroups(snap.Mounts, want, func(p string) bool { return a.busy[p] })
	}()
}

// settle is what the walk would have found had it run after the view
// was recorded in the Finder's Leftovers: of the cgroups it took, those
// WantCgroup takes now, less those below one of them, which a walk that
// knew would not have entered. The walk lists a cgroup before those below
// it, so the last one kept is the only one that can be above the next.
func (a *aheadWalk) settle(want func(string) bool) []proc.CgroupDir {
	out := make([]proc.CgroupDir, 0, len(a.dirs))
	last := ""
	for _, d := range a.dirs {
		if last != "" && strings.HasPrefix(d.Path, last+"/") {
			continue
		}
		if want(d.Path) {
			out = append(out, d)
			last = d.Path
		}
	}
	return out
}

// Add is WithLeftovers(lo, v), walking the cgroup hierarchy only when it
// must (see Finder), or settling the walk WalkAhead started for
// v.Snapshot.
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
	held := heldCgroups(snap)
	fp := f.fingerprint(held)
	if a := f.ahead; a != nil {
		f.ahead = nil
		<-a.done
		if a.snap == snap {
			dirs := a.settle(f.lo.WantCgroup)
			if a.err != nil {
				f.walked = time.Time{}
				return dirs, a.err
			}
			f.dirs, f.walked, f.print, f.mounts, f.busy = dirs, snap.Time, fp, snap.Mounts, a.busy
			return dirs, nil
		}
	}
	if f.walked.IsZero() || fp != f.print || snap.Mounts != f.mounts || snap.Time.Sub(f.walked) >= f.rewalk {
		busy := withAncestors(held)
		want := func(p string) (take, descend bool) { return f.lo.WantCgroup(p), false }
		dirs, err := proc.ListCgroups(snap.Mounts, want, func(p string) bool { return busy[p] })
		if err != nil {
			// A walk cut short is no basis for the next refreshes.
			f.walked = time.Time{}
			return dirs, err
		}
		f.dirs, f.walked, f.print, f.mounts, f.busy = dirs, snap.Time, fp, snap.Mounts, busy
		return dirs, nil
	}
	f.dirs = proc.RecheckCgroups(f.dirs, func(p string) bool { return f.busy[p] })
	return f.dirs, nil
}

// heldCgroups is the cgroups of the hierarchy ListCgroups walks that the
// scan found processes in.
func heldCgroups(snap *proc.Snapshot) map[string]proc.CgroupState {
	if snap.Mounts.Unified == "" {
		return snap.Freezers // ListCgroups walks the v1 freezer then
	}
	return snap.Cgroups
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
