package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPIDBirths checks the reading of /proc/loadavg's last pid: the first
// read and a moved pid say "maybe born", an unmoved one says "none", and
// anything unreadable says "maybe".
func TestPIDBirths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "loadavg")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := pidBirths{path: path, buf: make([]byte, 16)}
	steps := []struct {
		loadavg string
		want    bool
	}{
		{"0.10 0.20 0.30 1/200 4242\n", false}, // first read
		{"0.50 0.20 0.30 3/201 4242\n", true},  // load moved, pids did not
		{"0.50 0.20 0.30 3/202 4243\n", false},
		{"0.50 0.20 0.30 3/202 4243\n", true},
		{"garbage", false},
		{"0.50 0.20 0.30 3/202 4243\n", false}, // after a failure, list again
	}
	for i, s := range steps {
		write(s.loadavg)
		if got := b.none(); got != s.want {
			t.Errorf("step %d (%q): none() = %v, want %v", i, s.loadavg, got, s.want)
		}
	}
	if (pidBirths{}).path != "" || newPIDBirths(dir, false).path != "" {
		t.Error("a fixture tree (not a procfs) must always be listed")
	}
}

// TestScanSkipsListingWithoutBirths scans the live host: a refresh that
// lists nothing still finds a child born just before it, because the
// birth moved the last pid.
func TestScanSkipsListingWithoutBirths(t *testing.T) {
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.pids.births.path == "" {
		t.Skip("/proc is not this process's pid namespace's")
	}
	scan(t, s)
	skipped := false
	for range 3 {
		scan(t, s)
		if s.reads.list == 0 {
			skipped = true
		}
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	snap := scan(t, s)
	if snap.Proc(cmd.Process.Pid) == nil {
		t.Fatalf("a child born before the scan is missing (listed: %d)", s.reads.list)
	}
	t.Logf("skipped a listing in 3 refreshes (other work on the host forks): %v", skipped)
}
