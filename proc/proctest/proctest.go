// Package proctest is test support, imported only by tests: it imports
// testing, and nothing in a sandtop binary imports it. It holds what the
// tests that run on the live host share: RequireRoot and SkipMissing (the
// rule that CI does not quietly skip what it was set up to run),
// Eventually (wait on a condition, never a sleep), NobodyBinary (the
// test binary, where another user may run it), and ForkAtPID (provoking
// pid reuse).
//
// It imports nothing of sandtop, so that package proc's own tests can use
// it too.
package proctest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// InCI reports whether the tests run as `make test-all` (CI's tier) as
// root: SANDTOP_TEST_ALL=1 and uid 0. There every tool and runtime the
// tests use is installed (make test-deps), and cgroup2 and root are
// there, so a test that finds one missing has found a broken run, not a
// host that cannot run it.
func InCI() bool {
	return os.Getenv("SANDTOP_TEST_ALL") == "1" && os.Geteuid() == 0
}

// SkipMissing skips the test because the host lacks something it needs
// that CI provides: root, a writable cgroup2 hierarchy, a runtime or a
// tool that make test-deps installs. Under make test-all as root (InCI) it fails the
// test instead, so a run that silently tested less fails.
//
// Skips that are right everywhere (-short, a test that runs only as a
// re-executed child, a host feature a pure cgroup-v2 or old kernel lacks
// by design) call t.Skip directly.
func SkipMissing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("skipped in CI as root: %s (CI must provide it: see make test-deps)", msg)
	}
	t.Skip(msg)
}

// RequireRoot skips the test unless it runs as root; nothing in CI as
// root can skip here, but it says why a local run did.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipMissing(t, "needs root")
	}
}

// Eventually polls cond every 10 ms until it holds, or until timeout has
// passed, and reports whether it held. Tests wait with it on the state
// they expect instead of sleeping for a time that is long enough only on
// an idle machine.
func Eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// NobodyBinary copies the running test binary to a fresh directory that
// every user may enter and returns the copy's path: go test builds in a
// directory private to its user, so a test that re-runs itself as another
// user (nobody, or any uid) runs the copy. The directory is removed when the test
// ends.
func NobodyBinary(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "sandtop-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(self))
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func copyFile(from, to string, mode os.FileMode) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// ForkAtPID starts a sleep child with pid n by writing n-1 to
// ns_last_pid right before the fork. Other forks (and new runtime threads,
// which take pids too) can race for n, so it reports false when the child
// got another pid; that child is reaped at once. The child is killed and
// reaped at cleanup.
func ForkAtPID(t testing.TB, n int) (*exec.Cmd, bool) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(n-1)), 0); err != nil {
		SkipMissing(t, "cannot steer pid allocation: %v", err)
	}
	cmd := exec.Command("/bin/sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	reap := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	if cmd.Process.Pid != n {
		reap()
		return nil, false
	}
	t.Cleanup(reap)
	return cmd, true
}
