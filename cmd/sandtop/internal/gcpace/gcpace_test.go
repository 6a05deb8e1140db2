package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{2 << 20, 100},
		{4 << 20, 100},
		{8 << 20, 50},
		{16 << 20, 25},
		{160 << 20, 25},
	} {
		if got := gcPercentFor(tt.live, longRunningPacing); got != tt.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", tt.live>>20, got, tt.want)
		}
	}
}

// TestHeapTuner runs the tuner on the test binary's own heap, with three
// times the headroom live.
func TestHeapTuner(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	t.Setenv("GOGC", "100")
	if h := LongRunning(); h != nil {
		t.Errorf("with GOGC set, a tuner: %+v", h)
	}
	unsetenv(t, "GOGC")
	h := LongRunning()
	p := longRunningPacing
	big := make([][]byte, 0, 32)
	for range 3 * p.headroom >> 20 {
		big = append(big, make([]byte, 1<<20))
	}
	runtime.GC()
	h.Refreshed()
	got := debug.SetGCPercent(100)
	if got < p.floor || got > 100/3 {
		t.Errorf("with over %d MiB of live heap, the collector's target is %d, want %d to %d",
			3*p.headroom>>20, got, p.floor, 100/3)
	}
	runtime.KeepAlive(big)
}

// unsetenv removes an environment variable for the rest of the test.
func unsetenv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "") // restores the old value at the end
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}

// TestOneShotHeap runs the one-shot tuner on the test binary's heap: it
// leaves the target alone until scanned, which does not collect a small
// heap; with 12 MiB live, scanned collects, the target comes down to the
// floor, and once that heap is let go it rises again.
func TestOneShotHeap(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	t.Setenv("GOGC", "100")
	if h := OneShot(); h != nil {
		t.Errorf("with GOGC set, a tuner: %+v", h)
	}
	var none *Tuner
	none.Scanned() // nil: nothing to do, no panic
	unsetenv(t, "GOGC")

	read := func(name string) uint64 {
		s := []metrics.Sample{{Name: name}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	collections := func() uint64 { return read("/gc/cycles/total:gc-cycles") }
	target := func() int { return int(read("/gc/gogc:percent")) }

	small := OneShot()
	t.Cleanup(small.Stop)
	runtime.GC()
	if n := read("/memory/classes/heap/objects:bytes"); n < minHeapGoal {
		before := collections()
		small.Scanned()
		if collections() != before {
			t.Errorf("scanned collected a heap of %d KiB", n>>10)
		}
	} else {
		t.Logf("the test binary holds %d KiB of heap: scanned on a small heap is not tried", n>>10)
	}
	small.Stop()

	h := OneShot()
	t.Cleanup(h.Stop)
	big := make([][]byte, 0, 12)
	for range 12 { // 100 × 1.5 MiB / 12 MiB is under the floor
		big = append(big, make([]byte, 1<<20))
	}
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	if got := target(); got != 100 {
		t.Fatalf("before scanned, the target is %d, want Go's 100", got)
	}
	before := collections()
	h.Scanned()
	if collections() == before {
		t.Errorf("scanned did not collect 12 MiB of heap")
	}
	floor := oneShotPacing.floor
	if !eventually(func() bool { runtime.GC(); return target() == floor }) {
		t.Fatalf("with 12 MiB live, the target is %d after collections, want %d", target(), floor)
	}
	runtime.KeepAlive(big)
	big = nil
	if !eventually(func() bool { runtime.GC(); return target() > floor }) {
		t.Errorf("with the 12 MiB let go, the target stays %d", target())
	}
}

// eventually polls cond for up to 5 s: a finalizer runs on its own
// goroutine, some time after the collection that found its object.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}
