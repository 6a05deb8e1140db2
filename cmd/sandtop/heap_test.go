package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestHeapTuner(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	t.Setenv("GOGC", "100")
	if h := longRunning(); h != nil {
		t.Errorf("with GOGC set, a tuner: %+v", h)
	}
	unsetenv(t, "GOGC")
	h := longRunning()
	// What the test binary holds already (other tests' leftovers) must not
	// count: the threshold is set above it.
	runtime.GC()
	h.big = liveHeap() + bigHeap/2
	h.refreshed()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with a small live heap, the collector's target is %d, want 100", got)
	}
	big := make([][]byte, 0, 32)
	for range bigHeap >> 20 {
		big = append(big, make([]byte, 1<<20))
	}
	runtime.GC()
	h.refreshed()
	if got := debug.SetGCPercent(100); got != longRunGOGC {
		t.Errorf("with a live heap over %d MiB, the collector's target is %d, want %d", h.big>>20, got, longRunGOGC)
	}
	runtime.KeepAlive(big)
}

// liveHeap is the live heap as of the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// unsetenv removes an environment variable for the rest of the test.
func unsetenv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "") // restores the old value at the end
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}
