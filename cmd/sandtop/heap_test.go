package main

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestLongRunningRespectsGOGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	t.Setenv("GOGC", "100")
	longRunning()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, the collector's target became %d", got)
	}
	// t.Setenv cannot unset; LookupEnv is what longRunning asks.
	unsetenv(t, "GOGC")
	longRunning()
	if got := debug.SetGCPercent(100); got != longRunGOGC {
		t.Errorf("without GOGC, the collector's target is %d, want %d", got, longRunGOGC)
	}
}

// unsetenv removes an environment variable for the rest of the test.
func unsetenv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "") // restores the old value at the end
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}
