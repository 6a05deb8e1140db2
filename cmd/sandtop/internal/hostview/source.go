package hostview

import (
	"fmt"
	"sync"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// WalkEveryScan makes a Source walk the cgroup hierarchy at every scan:
// the reaper's choice, which acts on what it finds without a human to
// look first, so an empty cgroup made since the last scan is judged at
// once rather than within DefaultRewalk.
const WalkEveryScan = time.Nanosecond

// Source is the one pipeline from the host to a view that every
// long-running front end (the screen, serve, the reaper) takes: scan,
// group with a model.Builder that is handed each view back (attribution
// stays sticky for a process that stops matching while it lives), and add
// the sandboxes that left things behind (Finder), each view judged by a
// Watcher (resources, and the badges oom, stuck and hollow) first.
// One-shot commands group a single snapshot with Group.
type Source struct {
	mu   sync.Mutex
	sc   *proc.Scanner
	b    *model.Builder
	lo   *Finder
	w    *Watcher
	prev *model.View
	// settled and aside are what the last scan was told to settle.
	settled map[string]bool
	aside   map[proc.Identity]bool
	// afterScan runs after every scan, under the Source's lock: the
	// screen's heap tuning.
	afterScan func()
}

// NewSource groups sc's snapshots with rules, walking the cgroup
// hierarchy for leftovers at least every rewalk (DefaultRewalk when 0;
// WalkEveryScan). afterScan, when not nil, runs after each scan. The
// scanner is the caller's to close.
func NewSource(sc *proc.Scanner, rules model.Rules, rewalk time.Duration, afterScan func()) *Source {
	return &Source{sc: sc, b: model.NewBuilder(rules), lo: NewFinder(model.NewLeftovers(rules), rewalk), w: NewWatcher(sc), afterScan: afterScan}
}

// SetResourceNeeds narrows the cgroup figures the next scans read to
// what the front end shows (see Watcher.SetNeeds).
func (s *Source) SetResourceNeeds(n model.ResourceNeeds) { s.w.SetNeeds(n) }

// Scan reads the host once and groups it. What the leftover search could
// not read stays out of the view; the rest of it is still worth showing.
func (s *Source) Scan() (*model.View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// What the last view's front end shows nothing of needs no reading
	// for the sake of its processes' own figures (see proc.ScanHints).
	needs := s.w.Needs()
	s.settled = model.SettledCgroups(s.prev, needs, s.settled)
	s.aside = model.SettledAside(s.prev, s.settled, needs, s.aside)
	snap, err := s.sc.ScanWith(proc.ScanHints{Settled: s.settled, Aside: s.aside})
	if s.afterScan != nil {
		defer s.afterScan()
	}
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	s.prev, _ = s.lo.Add(s.w.Apply(s.b.Build(snap, s.prev)))
	return s.prev, nil
}

// Group groups one snapshot with rules, judged by w when it is not nil,
// the sandboxes that left things behind included: a one-shot command's
// view.
func Group(snap *proc.Snapshot, rules model.Rules, w *Watcher) *model.View {
	f := NewFinder(model.NewLeftovers(rules), 0)
	f.WalkAhead(snap)
	v := model.Build(snap, rules, nil)
	if w != nil {
		v = w.Apply(v)
	}
	v, _ = f.Add(v)
	return v
}
