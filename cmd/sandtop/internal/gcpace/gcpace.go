// Package gcpace tunes the garbage collector of sandtop's commands to the
// heap they hold (see Tuner).
package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The commands that refresh every second or so for days on a production
// host (the screen, record) tune the garbage collector to the heap they
// hold, and so does list over its one scan (OneShot); serve, which
// scans every 15 s, gives its memory back after each scan instead
// (exporter.Exporter). Go's default target (100) lets the heap grow to
// twice what is live before it collects, and on a large host that much
// garbage is a large part of the screen's resident memory. A refresh makes
// about the same garbage whatever the target, so the target only sets how
// many refreshes go by between collections, each costing about the same:
// past 4 MiB of live heap the target lets the heap grow by about 4 MiB
// between collections, which cuts resident memory without a measurable
// change in CPU per refresh. Below it the target stays 100: the runtime
// never lets the heap goal fall under 4 MB times the target, so a lower
// one would make a small host collect every refresh. The figures are in
// docs/performance.md ("Garbage collector pacing").
var longRunningPacing = pacing{headroom: 4 << 20, floor: 25}

// pacing is how far a tuned heap may grow between collections: by
// headroom, but never by less than floor percent of what is live.
type pacing struct {
	headroom uint64
	floor    int
}

// gcPercentFor is the collector's target for a live heap.
func gcPercentFor(live uint64, p pacing) int {
	if live <= p.headroom {
		return 100
	}
	return max(p.floor, int(100*p.headroom/live))
}

// Tuner sets the collector's target from the live heap after each
// refresh, or each collection (eachCollection); nil (the user chose with
// GOGC) does nothing.
type Tuner struct {
	pct    int
	pacing pacing
	sample []metrics.Sample
	// mu guards stopped and pct between eachCollection and stop.
	mu      sync.Mutex
	stopped bool
}

// LongRunning returns the tuner of a long-running command, or nil when
// the user set GOGC.
func LongRunning() *Tuner { return newTuner(longRunningPacing) }

// newTuner returns a tuner with pacing p, or nil when the user set
// GOGC.
func newTuner(p pacing) *Tuner {
	if _, set := os.LookupEnv("GOGC"); set {
		return nil
	}
	return &Tuner{pct: 100, pacing: p, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
}

// oneShotPacing lets a one-shot command's heap grow by 1.5 MiB between
// collections once its scan is done (see Scanned), or by 15% of what is
// live past 10 MiB.
var oneShotPacing = pacing{headroom: 3 << 19, floor: 15}

// OneShot returns the collector tuning of a one-shot command (list),
// for Scanned; nil when the user set GOGC.
func OneShot() *Tuner { return newTuner(oneShotPacing) }

// Scanned is called by a one-shot command at the hand-off from its scan to
// its grouping. The scan's garbage and the scanner's cache are dead then,
// and the snapshot is most of what lives: Scanned collects, and from then
// on the target follows oneShotPacing after every collection. Grouping
// allocates several times what it keeps, and at Go's default target the
// heap grew to twice what was live; paced, the peak falls for a few
// milliseconds more (docs/performance.md, "Garbage collector pacing"). The
// scan itself keeps the default: its peak is no higher than the
// grouping's, and its readers keep both cores busy.
//
// A heap under the runtime's smallest goal (4 MiB) is not collected before
// the command exits anyway, and collecting it would only cost time.
func (h *Tuner) Scanned() {
	if h == nil {
		return
	}
	h.eachCollection()
	objects := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(objects)
	if objects[0].Value.Kind() == metrics.KindUint64 && objects[0].Value.Uint64() < minHeapGoal {
		return
	}
	runtime.GC()
}

// minHeapGoal is the runtime's smallest heap goal, at GOGC 100
// (heapMinimum, runtime/mgcpacer.go).
const minHeapGoal = 4 << 20

// eachCollection calls Refreshed after every collection until Stop, from
// the runtime's finalizer goroutine: a finalizer runs once its object is
// found unreachable, and re-arms itself on the same object for the next
// cycle. Nothing else may call refreshed on h.
func (h *Tuner) eachCollection() {
	// A sentinel with a pointer: the runtime batches pointer-free objects
	// of a few bytes into one block, whose finalizers run late or never.
	type sentinel struct{ _ *byte }
	var arm func(*sentinel)
	arm = func(s *sentinel) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.stopped {
			return
		}
		h.Refreshed()
		runtime.SetFinalizer(s, arm)
	}
	runtime.SetFinalizer(&sentinel{}, arm)
}

// Stop ends eachCollection and gives the collector Go's target back, for
// whatever runs next in the process (commands run in process, as tests
// run them).
func (h *Tuner) Stop() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	if h.pct != 100 {
		debug.SetGCPercent(100)
		h.pct = 100
	}
}

// Refreshed picks the target for the heap a refresh left. A target within
// a few points of the current one is left alone: the live heap wobbles
// from refresh to refresh, and a new target re-paces the collection under
// way.
func (h *Tuner) Refreshed() {
	if h == nil {
		return
	}
	metrics.Read(h.sample)
	if h.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	want := gcPercentFor(h.sample[0].Value.Uint64(), h.pacing)
	if want != h.pct && (want == 100 || abs(want-h.pct) >= 5) {
		debug.SetGCPercent(want)
		h.pct = want
	}
}

func abs(n int) int { return max(n, -n) }
