package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestGCPercentFor(t *testing.T) {
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{2 << 20, 100},
		{heapHeadroom, 100},
		{2 * heapHeadroom, 50},
		{4 * heapHeadroom, 25},
		{40 * heapHeadroom, minGOGC},
	} {
		if got := gcPercentFor(tt.live); got != tt.want {
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
	if h := longRunning(); h != nil {
		t.Errorf("with GOGC set, a tuner: %+v", h)
	}
	unsetenv(t, "GOGC")
	h := longRunning()
	big := make([][]byte, 0, 32)
	for range 3 * heapHeadroom >> 20 {
		big = append(big, make([]byte, 1<<20))
	}
	runtime.GC()
	h.refreshed()
	got := debug.SetGCPercent(100)
	if got < minGOGC || got > 100*heapHeadroom/(3*heapHeadroom) {
		t.Errorf("with over %d MiB of live heap, the collector's target is %d, want %d to %d",
			3*heapHeadroom>>20, got, minGOGC, 100*heapHeadroom/(3*heapHeadroom))
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
