package teardown

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc/proctest"
)

// cgroupMount finds a writable cgroup hierarchy in /proc/self/mountinfo
// (proc(5)): the cgroup2 mount when controller is "", else the v1 mount
// carrying that controller. It skips the test when there is none.
func cgroupMount(t *testing.T, controller string) string {
	t.Helper()
	proctest.RequireRoot(t)
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skipf("no mountinfo: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		left, right, ok := strings.Cut(strings.TrimSpace(line), " - ")
		mf, sf := strings.Fields(left), strings.Fields(right)
		if !ok || len(mf) < 5 || len(sf) < 3 {
			continue
		}
		mountPoint, fstype, opts := mf[4], sf[0], strings.Split(sf[2], ",")
		switch {
		case controller == "" && fstype == "cgroup2",
			controller != "" && fstype == "cgroup" && slices.Contains(opts, controller):
			if unix.Access(mountPoint, unix.W_OK) == nil {
				return mountPoint
			}
		}
	}
	if controller != "" {
		// A pure cgroup-v2 host has no v1 hierarchy, by design.
		t.Skipf("no writable cgroup v1 %s mount", controller)
	}
	proctest.SkipMissing(t, "no writable cgroup2 mount")
	return ""
}

// newCgroup makes a fresh cgroup under parent, removed at cleanup (after
// the test's children, which were started later, are killed and reaped).
func newCgroup(t *testing.T, parent string) string {
	t.Helper()
	dir, err := os.MkdirTemp(parent, "sandtop-test-")
	if err != nil {
		t.Fatalf("make cgroup: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := RemoveTree(ctx, dir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return dir
}

func mkdirs(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// moveInto moves a child into dir. Its cleanup (which runs before the
// child is killed) thaws dir: a task frozen by the v1 freezer would not
// die from the SIGKILL and the child's cleanup would wait forever.
func moveInto(t *testing.T, dir string, pid int) {
	t.Helper()
	if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
		t.Fatalf("move %d into %s: %v", pid, dir, err)
	}
	t.Cleanup(func() {
		writeFile(filepath.Join(dir, "cgroup.freeze"), "0")
		writeFile(filepath.Join(dir, "freezer.state"), "THAWED")
	})
}

func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	return errors.Join(err, f.Close())
}

func readEvent(t *testing.T, dir, key string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		t.Fatal(err)
	}
	v, ok := eventValue(b, key)
	if !ok {
		t.Fatalf("%s/cgroup.events has no %s: %q", dir, key, b)
	}
	return v
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestCgroupV2Lifecycle(t *testing.T) {
	dir := newCgroup(t, cgroupMount(t, ""))
	leaf := filepath.Join(dir, "a", "b")
	mkdirs(t, leaf)
	cmds, pins := pinnedSleeps(t, 2)
	moveInto(t, dir, cmds[0].Process.Pid)
	moveInto(t, leaf, cmds[1].Process.Pid)
	if got := readEvent(t, dir, "populated"); got != "1" {
		t.Fatalf("populated = %s after moving children in", got)
	}

	start := time.Now()
	if err := freeze(timeout(t, 5*time.Second), dir); err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	t.Logf("Freeze took %v", time.Since(start))
	// Freeze waited for dir; each descendant reports its own frozen state
	// in its own cgroup.events, which a read may find a moment behind.
	for _, d := range []string{dir, leaf} {
		if err := waitCgroupEvent(timeout(t, time.Second), d, "frozen", "1"); err != nil {
			t.Errorf("%s after Freeze: %v (frozen = %s), want frozen 1", d, err, readEvent(t, d, "frozen"))
		}
	}
	if err := Thaw(dir); err != nil {
		t.Fatalf("Thaw: %v", err)
	}
	if got := readEvent(t, leaf, "frozen"); got != "0" {
		t.Errorf("frozen = %s right after Thaw, want 0", got)
	}

	// Kill while frozen: v2 lets SIGKILL through the freezer.
	if err := freeze(timeout(t, 5*time.Second), dir); err != nil {
		t.Fatalf("second Freeze: %v", err)
	}
	start = time.Now()
	if err := Kill(dir); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if exited, err := WaitExit(timeout(t, 5*time.Second), pins); err != nil || len(exited) != 2 {
		t.Fatalf("children after Kill of a frozen cgroup: %d exited, %v", len(exited), err)
	}
	t.Logf("Kill of a frozen cgroup: children exited within %v", time.Since(start))
	// Not reaped yet: a zombie has already left its cgroup.
	if err := WaitCgroupEmpty(timeout(t, 5*time.Second), dir); err != nil {
		t.Fatalf("WaitCgroupEmpty with unreaped zombies: %v", err)
	}
	for _, cmd := range cmds {
		if sig := signalOf(t, reap(cmd)); sig != unix.SIGKILL {
			t.Errorf("child died of %v, want SIGKILL", sig)
		}
	}

	start = time.Now()
	if err := RemoveTree(timeout(t, 5*time.Second), dir); err != nil {
		t.Fatalf("RemoveTree: %v", err)
	}
	t.Logf("RemoveTree took %v", time.Since(start))
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still there after RemoveTree: %v", dir, err)
	}
}

// TestRemoveTreeRightAfterKill: rmdir is EBUSY until the killed tasks have
// exited; RemoveTree must ride that out without WaitCgroupEmpty first.
func TestRemoveTreeRightAfterKill(t *testing.T) {
	dir := newCgroup(t, cgroupMount(t, ""))
	leaf := filepath.Join(dir, "x")
	mkdirs(t, leaf)
	cmds, _ := pinnedSleeps(t, 5)
	for _, cmd := range cmds {
		moveInto(t, leaf, cmd.Process.Pid)
	}
	if err := Kill(dir); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	start := time.Now()
	if err := RemoveTree(timeout(t, 5*time.Second), dir); err != nil {
		t.Fatalf("RemoveTree right after Kill: %v", err)
	}
	t.Logf("RemoveTree right after Kill took %v", time.Since(start))
}

func TestRemoveTreeBusy(t *testing.T) {
	dir := newCgroup(t, cgroupMount(t, ""))
	cmds, _ := pinnedSleeps(t, 1)
	moveInto(t, dir, cmds[0].Process.Pid)
	start := time.Now()
	err := RemoveTree(timeout(t, 100*time.Millisecond), dir)
	if !errors.Is(err, unix.EBUSY) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RemoveTree of a populated cgroup = %v, want EBUSY after the deadline", err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("RemoveTree overran its 100ms deadline: %v", elapsed)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("populated cgroup was removed: %v", err)
	}
}

func TestRemoveTreeGone(t *testing.T) {
	dir := filepath.Join(cgroupMount(t, ""), "sandtop-test-never-made")
	if err := RemoveTree(timeout(t, time.Second), dir); err != nil {
		t.Fatalf("RemoveTree of a missing cgroup = %v, want nil", err)
	}
}

func TestWaitCgroupEmpty(t *testing.T) {
	t.Run("child exits", func(t *testing.T) {
		dir := newCgroup(t, cgroupMount(t, ""))
		cmds, pins := pinnedSleeps(t, 1)
		moveInto(t, dir, cmds[0].Process.Pid)
		const after = 60 * time.Millisecond
		time.AfterFunc(after, func() { pins[0].Signal(unix.SIGTERM) })
		start := time.Now()
		if err := WaitCgroupEmpty(timeout(t, 5*time.Second), dir); err != nil {
			t.Fatalf("WaitCgroupEmpty: %v", err)
		}
		if elapsed := time.Since(start); elapsed < after {
			t.Errorf("returned after %v, before the child was signalled at %v", elapsed, after)
		}
		if got := readEvent(t, dir, "populated"); got != "0" {
			t.Errorf("populated = %s after WaitCgroupEmpty", got)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		dir := newCgroup(t, cgroupMount(t, ""))
		cmds, _ := pinnedSleeps(t, 1)
		moveInto(t, dir, cmds[0].Process.Pid)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		err := WaitCgroupEmpty(ctx, dir)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("WaitCgroupEmpty = %v, want context.Canceled", err)
		}
		if elapsed := time.Since(start); elapsed > 150*time.Millisecond {
			t.Errorf("returned %v after start, cancel was at 50ms", elapsed)
		}
	})
	t.Run("already empty", func(t *testing.T) {
		dir := newCgroup(t, cgroupMount(t, ""))
		if err := WaitCgroupEmpty(timeout(t, time.Second), dir); err != nil {
			t.Fatalf("WaitCgroupEmpty of an empty cgroup: %v", err)
		}
	})
	t.Run("gone", func(t *testing.T) {
		dir := filepath.Join(cgroupMount(t, ""), "sandtop-test-never-made")
		if err := WaitCgroupEmpty(timeout(t, time.Second), dir); err != nil {
			t.Fatalf("WaitCgroupEmpty of a missing cgroup: %v", err)
		}
	})
}

func TestCgroupV1Freezer(t *testing.T) {
	dir := newCgroup(t, cgroupMount(t, "freezer"))
	cmds, pins := pinnedSleeps(t, 1)
	moveInto(t, dir, cmds[0].Process.Pid)

	start := time.Now()
	if err := FreezeV1(timeout(t, 5*time.Second), dir); err != nil {
		t.Fatalf("FreezeV1: %v", err)
	}
	t.Logf("FreezeV1 took %v", time.Since(start))
	if b, _ := os.ReadFile(filepath.Join(dir, "freezer.state")); strings.TrimSpace(string(b)) != "FROZEN" {
		t.Fatalf("freezer.state = %q after FreezeV1", b)
	}

	// A v1-frozen task does not act on SIGKILL until it is thawed.
	if err := pins[0].Signal(unix.SIGKILL); err != nil {
		t.Fatalf("Signal(SIGKILL): %v", err)
	}
	exited, err := WaitExit(timeout(t, 200*time.Millisecond), pins)
	if !errors.Is(err, context.DeadlineExceeded) || len(exited) != 0 {
		t.Fatalf("frozen child after SIGKILL: %d exited, %v; want still alive", len(exited), err)
	}
	if err := ThawV1(dir); err != nil {
		t.Fatalf("ThawV1: %v", err)
	}
	if exited, err := WaitExit(timeout(t, 5*time.Second), pins); err != nil || len(exited) != 1 {
		t.Fatalf("child after ThawV1: %d exited, %v; want dead", len(exited), err)
	}
	if sig := signalOf(t, reap(cmds[0])); sig != unix.SIGKILL {
		t.Errorf("child died of %v, want SIGKILL", sig)
	}
	if err := RemoveTree(timeout(t, 5*time.Second), dir); err != nil {
		t.Fatalf("RemoveTree: %v", err)
	}
}

// TestSetPidsMax0 uses a cgroup where pids.max exists: a v2 one when the
// pids controller is enabled there, else the v1 pids hierarchy (the file
// means the same in both).
func TestSetPidsMax0(t *testing.T) {
	perl, err := exec.LookPath("perl")
	if err != nil {
		proctest.SkipMissing(t, "needs perl for a child that reports fork failures without dying")
	}
	dir := newCgroup(t, cgroupMount(t, ""))
	if _, err := os.Stat(filepath.Join(dir, "pids.max")); err != nil {
		if _, err := SetPidsMax0(dir); !errors.Is(err, ErrNoPidsMax) {
			t.Fatalf("SetPidsMax0 without pids.max = %v, want ErrNoPidsMax", err)
		}
		dir = newCgroup(t, cgroupMount(t, "pids"))
	}
	// The child forks once per input line and says whether fork worked.
	cmd := exec.Command(perl, "-e", `$|=1; while (<STDIN>) {
		my $p = fork(); if (!defined $p) { print "fail\n" } elsif ($p == 0) { exit 0 } else { waitpid($p, 0); print "ok\n" } }`)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reap(cmd) })
	moveInto(t, dir, cmd.Process.Pid)
	lines := bufio.NewScanner(stdout)
	fork := func() string {
		t.Helper()
		if _, err := io.WriteString(stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("child said nothing: %v", lines.Err())
		}
		return lines.Text()
	}

	if got := fork(); got != "ok" {
		t.Fatalf("fork before SetPidsMax0: %s", got)
	}
	restore, err := SetPidsMax0(dir)
	if err != nil {
		t.Fatalf("SetPidsMax0: %v", err)
	}
	if got := fork(); got != "fail" {
		t.Errorf("fork with pids.max 0: %s, want fail", got)
	}
	if err := restore(); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "pids.max")); strings.TrimSpace(string(b)) != "max" {
		t.Errorf("pids.max after restore = %q, want max", b)
	}
	if got := fork(); got != "ok" {
		t.Errorf("fork after restore: %s", got)
	}
}

// TestCgroupWritesRefuseStrangers: the write path never touches anything
// that is not the right kind of cgroup, and tells a vanished cgroup from a
// kernel that lacks a file.
func TestCgroupWritesRefuseStrangers(t *testing.T) {
	v2 := newCgroup(t, cgroupMount(t, ""))
	v1 := newCgroup(t, cgroupMount(t, "freezer"))
	plain := t.TempDir()
	missing := filepath.Join(v2, "no-such-child")
	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"Kill of a plain directory", func() error { return Kill(plain) }, ErrNotCgroup},
		{"Kill of a v1 cgroup", func() error { return Kill(v1) }, ErrNotCgroup},
		{"Kill of a missing cgroup", func() error { return Kill(missing) }, ErrCgroupGone},
		{"freeze of a missing cgroup", func() error { return freeze(context.Background(), missing) }, ErrCgroupGone},
		{"Thaw of a plain directory", func() error { return Thaw(plain) }, ErrNotCgroup},
		{"FreezeV1 of a v2 cgroup", func() error { return FreezeV1(context.Background(), v2) }, ErrNotCgroup},
		{"ThawV1 of a missing cgroup", func() error { return ThawV1(filepath.Join(v1, "nope")) }, ErrCgroupGone},
		{"SetPidsMax0 of a plain directory", func() error { _, err := SetPidsMax0(plain); return err }, ErrNotCgroup},
		{"RemoveTree of a plain directory", func() error { return RemoveTree(context.Background(), plain) }, ErrNotCgroup},
		{"ReadProcs of a missing cgroup", func() error { _, err := ReadProcs(missing); return err }, ErrCgroupGone},
		// What Kill sees on a kernel before 5.14: a live cgroup without
		// cgroup.kill. The v1 directory has none, so it stands in.
		{"cgroup.kill missing in a live cgroup", func() error {
			return writeCgroupFile(v1, "cgroup.kill", "1", fsV1, ErrNoCgroupKill)
		}, ErrNoCgroupKill},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.op(); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	if entries, _ := os.ReadDir(plain); len(entries) != 0 {
		t.Errorf("writes created files in a plain directory: %v", entries)
	}
}

func TestReadProcs(t *testing.T) {
	dir := newCgroup(t, cgroupMount(t, ""))
	cmds, _ := pinnedSleeps(t, 3)
	var want []int
	for _, cmd := range cmds {
		moveInto(t, dir, cmd.Process.Pid)
		want = append(want, cmd.Process.Pid)
	}
	slices.Sort(want)
	got, err := ReadProcs(dir)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("ReadProcs = %v, %v; want %v", got, err, want)
	}
}

func TestEventValue(t *testing.T) {
	in := []byte("populated 1\nfrozen 0\n")
	tests := []struct {
		key, want string
		ok        bool
	}{
		{"populated", "1", true},
		{"frozen", "0", true},
		{"froze", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got, ok := eventValue(in, tt.key); got != tt.want || ok != tt.ok {
				t.Errorf("eventValue(%q) = %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// freeze freezes every process in dir's subtree (writes 1 to cgroup.freeze)
// and waits until cgroup.events reports "frozen 1". Freezing is
// asynchronous: a task in uninterruptible sleep freezes only when it wakes,
// so give ctx a deadline. A frozen v2 task still dies from SIGKILL and from
// cgroup.kill, without a thaw. The engine never freezes a v2 cgroup (it
// kills through cgroup.kill); the tests freeze one to prove that.
func freeze(ctx context.Context, dir string) error {
	if err := writeCgroupFile(dir, "cgroup.freeze", "1", fsV2, ErrNoCgroupFreeze); err != nil {
		return fmt.Errorf("freeze: %w", err)
	}
	if err := waitCgroupEvent(ctx, dir, "frozen", "1"); err != nil {
		return fmt.Errorf("freeze %s: %w", dir, err)
	}
	return nil
}
