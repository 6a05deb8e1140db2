package main

import (
	"os"
	"runtime"
	"runtime/debug"
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
	runtime.GC()
	h.refreshed()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with a small live heap, the collector's target is %d, want 100", got)
	}
	big := make([][]byte, 0, 32)
	for range 24 {
		big = append(big, make([]byte, 1<<20))
	}
	runtime.GC()
	h.refreshed()
	if got := debug.SetGCPercent(100); got != longRunGOGC {
		t.Errorf("with a live heap over %d MiB, the collector's target is %d, want %d", bigHeap>>20, got, longRunGOGC)
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
