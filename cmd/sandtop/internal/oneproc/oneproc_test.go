package oneproc

import (
	"os"
	"runtime"
	"testing"
)

func TestNarrowsAtFirstRefreshAndGivesBack(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: nothing to narrow")
	}
	unsetenv(t, "GOMAXPROCS")
	prev := runtime.GOMAXPROCS(2)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })

	n := AfterFirstRefresh()
	if n == nil {
		t.Fatal("no narrower with GOMAXPROCS unset")
	}
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("before the first refresh, %d processors, want the 2 it had", got)
	}
	n.Refreshed()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("after the first refresh, %d processors, want 1", got)
	}
	runtime.GOMAXPROCS(2) // as if something else widened it: later refreshes leave it
	n.Refreshed()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("a later refresh narrowed again (%d processors)", got)
	}
	runtime.GOMAXPROCS(1)
	n.Stop()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("after Stop, %d processors, want the 2 it had", got)
	}
	n.Refreshed()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("a refresh after Stop narrowed (%d processors)", got)
	}
}

func TestUserChoiceStands(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	if n := AfterFirstRefresh(); n != nil {
		t.Errorf("with GOMAXPROCS set, a narrower: %+v", n)
	}
	var n *Narrower
	n.Refreshed() // nil does nothing
	n.Stop()
}

// unsetenv removes an environment variable for the rest of the test.
func unsetenv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "") // restores the old value at the end
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}
