package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
)

// The commands that refresh every second or so for days on a production
// host (the screen, record) tune the garbage collector to the heap they
// hold; serve, which scans every 15 s, gives its memory back after each
// scan instead (exporter.Exporter). Go's default
// target (100) lets the heap grow to twice what is live before it
// collects: at 10,000 processes the screen holds about 15 MB, and that
// much again in garbage was over a third of its resident memory. A
// refresh makes 1.5-2 MB of garbage whatever the target, so what the
// target sets is how many refreshes go by between collections, each of
// which costs about the same. Past heapHeadroom of live heap, the target
// lets the heap grow by about heapHeadroom between collections, a
// collection every two or three refreshes at 10,000 processes: at 30
// instead of 100 the screen's RSS there measured 36 MiB instead of 44, and
// its CPU per refresh did not move measurably. Below it the target stays
// 100: the runtime never lets the heap goal fall under 4 MB times the
// target, so a lower one makes a small host collect every refresh (at 40,
// a 100-process screen collected every 1.6 MB and spent 2.9 ms a refresh
// instead of 2.3).
const (
	heapHeadroom = 4 << 20
	minGOGC      = 25
)

// gcPercentFor is the collector's target for a live heap.
func gcPercentFor(live uint64) int {
	if live <= heapHeadroom {
		return 100
	}
	return max(minGOGC, int(100*heapHeadroom/live))
}

// heapTuner sets the collector's target from the live heap after each
// refresh; nil (the user chose with GOGC) does nothing.
type heapTuner struct {
	pct    int
	sample []metrics.Sample
}

// longRunning returns the tuner of a long-running command, or nil when
// the user set GOGC.
func longRunning() *heapTuner {
	if _, set := os.LookupEnv("GOGC"); set {
		return nil
	}
	return &heapTuner{pct: 100, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
}

// refreshed picks the target for the heap a refresh left. A target within
// a few points of the current one is left alone: the live heap wobbles
// from refresh to refresh, and a new target re-paces the collection under
// way.
func (h *heapTuner) refreshed() {
	if h == nil {
		return
	}
	metrics.Read(h.sample)
	if h.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	want := gcPercentFor(h.sample[0].Value.Uint64())
	if want != h.pct && (want == 100 || abs(want-h.pct) >= 5) {
		debug.SetGCPercent(want)
		h.pct = want
	}
}

func abs(n int) int { return max(n, -n) }
