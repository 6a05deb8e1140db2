package proc

import "testing"

// An unreadable socket table must read as "cannot tell" (nil), not as
// "nothing listens" (empty): the model would call every socket-supervised
// sandbox an orphan.
func TestScanWithoutSocketTable(t *testing.T) {
	snap := scan(t, newFixtureScanner(t, "testdata/v1only")) // has no net/unix
	if snap.Listeners != nil {
		t.Errorf("Listeners = %v, want nil when /proc/net/unix cannot be read", snap.Listeners)
	}
	if snap := scan(t, newFixtureScanner(t, "testdata/host")); snap.Listeners == nil {
		t.Error("Listeners nil although the fixture has a socket table")
	}
}
