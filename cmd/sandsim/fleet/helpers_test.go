package fleet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// TestMain lets this test binary serve as owner and node binary, and makes
// it a subreaper that reaps whatever it is left with.
func TestMain(m *testing.M) { Main(m) }

// startFleet starts spec and registers a cleanup that closes the fleet and
// proves that nothing of it survived.
func startFleet(t *testing.T, spec Spec) (*Fleet, Manifest) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	begin := time.Now()
	f, err := Start(ctx, spec, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("Start(%s): %v", spec.Scenario, err)
	}
	t.Logf("started %d processes in %v", len(f.Manifest().Processes()), time.Since(begin))
	m := f.Manifest()
	t.Cleanup(func() {
		begin := time.Now()
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		t.Logf("closed in %v", time.Since(begin))
		assertGone(t, &m)
	})
	return f, m
}

// assertGone checks, independently of Close, that no process of the
// manifest lives (with its start time), no cgroup directory is left and
// the temp directory is gone.
func assertGone(t *testing.T, m *Manifest) {
	t.Helper()
	for _, p := range append(m.Processes(), m.Owner) {
		if st, err := readStat(p.PID); err == nil && st.Starttime == p.Start {
			t.Errorf("%s %s survived in state %s", p.Role, p.Identity, st.State)
		}
	}
	for _, d := range m.CgroupDirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s survived", d)
		}
	}
	if _, err := os.Stat(m.Base); err == nil {
		t.Errorf("temp dir %s survived", m.Base)
	}
}

func mustStat(t *testing.T, pid int) procfs.ProcStat {
	t.Helper()
	st, err := readStat(pid)
	if err != nil {
		t.Fatalf("stat %d: %v", pid, err)
	}
	return st
}

func cmdline(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("cmdline %d: %v", pid, err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func comm(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		t.Fatalf("comm %d: %v", pid, err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

func cwd(t *testing.T, pid int) string {
	t.Helper()
	d, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		t.Fatalf("cwd %d: %v", pid, err)
	}
	return d
}

func procCgroup(t *testing.T, pid int) procCgroups {
	t.Helper()
	cg, err := readProcCgroup(pid)
	if err != nil {
		t.Fatalf("cgroup of %d: %v", pid, err)
	}
	return cg
}

// statusField returns one field of /proc/PID/status.
func statusField(t *testing.T, pid int, field string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("status %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return ""
}

// ignores reports whether the process has sig in its SigIgn mask; bit n-1
// stands for signal n (proc(5), "SigIgn").
func ignores(t *testing.T, pid, sig int) bool {
	t.Helper()
	mask, err := strconv.ParseUint(statusField(t, pid, "SigIgn"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return mask&(1<<(sig-1)) != 0
}

// listening reports whether a unix socket at path is in the listening
// state in /proc/net/unix (St 01 is SS_UNCONNECTED with the ACC flag
// 00010000 set for listeners).
func listening(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(b, []byte("\n"))[1:] {
		f := strings.Fields(string(line))
		if len(f) >= 8 && f[7] == path && f[3] == "00010000" {
			return true
		}
	}
	return false
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// role returns the one process with the role in the sandbox.
func role(t *testing.T, s *Sandbox, r string) Process {
	t.Helper()
	ps := s.Role(r)
	if len(ps) != 1 {
		t.Fatalf("%s: %d processes with role %q, want 1", s.Name, len(ps), r)
	}
	return ps[0]
}

func sandbox(t *testing.T, m *Manifest, name string) *Sandbox {
	t.Helper()
	s := m.Sandbox(name)
	if s == nil {
		t.Fatalf("no sandbox %q in manifest", name)
	}
	return s
}

// isFrozen reads the freezer state of a cgroup.
func isFrozen(dir string, v1 bool) (bool, error) {
	if v1 {
		b, err := os.ReadFile(filepath.Join(dir, "freezer.state"))
		return hasLine(b, "FROZEN") || hasLine(b, "FREEZING"), err
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	return hasLine(b, "frozen 1"), err
}
