package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
)

// The commands that run for days on a production host (the screen, serve,
// record) tune the garbage collector to the heap they hold. Go's default
// target (100) lets the heap grow to twice what is live before it
// collects; at 10,000 processes the screen's live heap is about 20 MB, so
// that headroom was a quarter of its resident memory, and at 40 the
// screen's RSS measured 46-48 MiB instead of 56-59, for under 1% more CPU
// per refresh (a refresh makes under 2 MB of garbage). On a small host the
// same 40 costs: the runtime never lets the heap goal fall under 4 MB
// times the target, so at 40 a 100-process screen collected every 1.6 MB
// and spent 2.9 ms a refresh instead of 2.3. So the target is 40 only
// once the live heap is large.
const (
	longRunGOGC = 40
	bigHeap     = 12 << 20
)

// heapTuner sets the collector's target from the live heap after each
// refresh; nil (the user chose with GOGC) does nothing.
type heapTuner struct {
	pct int
	// big is the live heap past which the target is longRunGOGC.
	big    uint64
	sample []metrics.Sample
}

// longRunning returns the tuner of a long-running command, or nil when
// the user set GOGC.
func longRunning() *heapTuner {
	if _, set := os.LookupEnv("GOGC"); set {
		return nil
	}
	return &heapTuner{pct: 100, big: bigHeap, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
}

// refreshed picks the target for the heap a refresh left.
func (h *heapTuner) refreshed() {
	if h == nil {
		return
	}
	metrics.Read(h.sample)
	want := 100
	if h.sample[0].Value.Kind() == metrics.KindUint64 && h.sample[0].Value.Uint64() > h.big {
		want = longRunGOGC
	}
	if want != h.pct {
		debug.SetGCPercent(want)
		h.pct = want
	}
}
