package teardown

// Cgroup writes. Every write goes through writeCgroupFile, which refuses
// anything not on a cgroup filesystem and never creates a file: a wrong
// path must fail, not leave a "cgroup.kill" lying in some directory.
//
// References: Documentation/admin-guide/cgroup-v2.rst (cgroup.freeze,
// cgroup.kill, cgroup.events, pids.max) and
// Documentation/admin-guide/cgroup-v1/freezer-subsystem.rst.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc"
)

var (
	// ErrCgroupGone means the cgroup directory no longer exists: like a
	// vanished process, the normal end of a teardown.
	ErrCgroupGone = errors.New("cgroup no longer exists")
	// ErrNoCgroupKill means the cgroup has no cgroup.kill (Linux < 5.14):
	// kill its processes one by one instead.
	ErrNoCgroupKill = errors.New("no cgroup.kill (needs Linux 5.14)")
	// ErrNoCgroupFreeze means the cgroup has no cgroup.freeze (Linux < 5.2,
	// or the root cgroup, which cannot be frozen).
	ErrNoCgroupFreeze = errors.New("no cgroup.freeze (needs Linux 5.2, not the root cgroup)")
	// ErrNoPidsMax means the cgroup has no pids.max: the pids controller is
	// not enabled for it.
	ErrNoPidsMax = errors.New("no pids.max (pids controller not enabled here)")
	// ErrNotCgroup means the directory is not on the expected cgroup
	// filesystem (cgroup2 for v2 operations, cgroup for v1 ones).
	ErrNotCgroup = errors.New("not a cgroup directory")
)

// fsKind is a set of acceptable filesystem types for a cgroup operation.
type fsKind int

const (
	fsV2  fsKind = 1 << iota // cgroup2 (statfs(2) CGROUP2_SUPER_MAGIC)
	fsV1                     // cgroup v1 (CGROUP_SUPER_MAGIC)
	fsAny = fsV1 | fsV2
)

// maxPause caps the backoff of the two waits that have to poll: v1
// freezer.state (no notification exists) and rmdir's EBUSY.
const maxPause = 50 * time.Millisecond

// Thaw undoes a freeze (writes 0 to cgroup.freeze). The kernel clears
// "frozen" synchronously, so there is nothing to wait for.
func Thaw(dir string) error {
	if err := writeCgroupFile(dir, "cgroup.freeze", "0", fsV2, ErrNoCgroupFreeze); err != nil {
		return fmt.Errorf("thaw: %w", err)
	}
	return nil
}

// Kill sends SIGKILL to every process in dir's subtree at once (writes 1 to
// cgroup.kill), which also catches processes forked while it runs. It
// returns ErrNoCgroupKill (wrapped) on kernels older than 5.14 (and for the
// root cgroup, which has no cgroup.kill). It does not wait: use
// WaitCgroupEmpty.
func Kill(dir string) error {
	if err := writeCgroupFile(dir, "cgroup.kill", "1", fsV2, ErrNoCgroupKill); err != nil {
		return fmt.Errorf("cgroup kill: %w", err)
	}
	return nil
}

// SetPidsMax0 sets pids.max to 0 so nothing in dir's subtree can fork while
// it is torn down, and returns a func that writes the previous limit back.
// It returns ErrNoPidsMax (wrapped) when dir has no pids.max; the pids
// controller has the same file in v1 and v2, so either works. restore is
// never nil and reports no error once the cgroup is gone.
func SetPidsMax0(dir string) (restore func() error, err error) {
	restore = func() error { return nil }
	old, err := readCgroupFile(dir, "pids.max", fsAny, ErrNoPidsMax)
	if err != nil {
		return restore, fmt.Errorf("pids.max: %w", err)
	}
	prev := string(bytes.TrimSpace(old))
	if err := writeCgroupFile(dir, "pids.max", "0", fsAny, ErrNoPidsMax); err != nil {
		return restore, fmt.Errorf("pids.max: %w", err)
	}
	return func() error {
		err := writeCgroupFile(dir, "pids.max", prev, fsAny, ErrNoPidsMax)
		if errors.Is(err, ErrCgroupGone) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("restore pids.max: %w", err)
		}
		return nil
	}, nil
}

// FreezeV1 freezes a v1 freezer cgroup (writes FROZEN to freezer.state) and
// waits until freezer.state reads FROZEN rather than FREEZING. The v1
// freezer sends no change notification, so this polls; each read also
// makes the kernel re-evaluate the state. Unlike v2, a task frozen by the
// v1 freezer does not die from SIGKILL until it is thawed.
func FreezeV1(ctx context.Context, dir string) error {
	if err := writeCgroupFile(dir, "freezer.state", "FROZEN", fsV1, ErrNotCgroup); err != nil {
		return fmt.Errorf("freeze v1: %w", err)
	}
	for pause := time.Millisecond; ; pause = min(2*pause, maxPause) {
		b, err := readCgroupFile(dir, "freezer.state", fsV1, ErrNotCgroup)
		if err != nil {
			return fmt.Errorf("freeze v1: %w", err)
		}
		if string(bytes.TrimSpace(b)) == "FROZEN" {
			return nil
		}
		if err := sleepCtx(ctx, pause); err != nil {
			return fmt.Errorf("freeze v1 %s: still %s: %w", dir, bytes.TrimSpace(b), err)
		}
	}
}

// ThawV1 thaws a v1 freezer cgroup (writes THAWED to freezer.state).
func ThawV1(dir string) error {
	if err := writeCgroupFile(dir, "freezer.state", "THAWED", fsV1, ErrNotCgroup); err != nil {
		return fmt.Errorf("thaw v1: %w", err)
	}
	return nil
}

// ReadProcs returns the pids in dir's cgroup.procs (this cgroup only, not
// its subtree), sorted and without duplicates. It returns ErrCgroupGone
// (wrapped) when dir is gone and ErrNotCgroup when dir is not a cgroup.
func ReadProcs(dir string) ([]int, error) {
	if err := checkCgroupFS(dir, fsAny); err != nil {
		return nil, err
	}
	pids, err := proc.ReadCgroupProcs(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, missingFile(dir, "cgroup.procs", ErrNotCgroup)
	case errors.Is(err, unix.ENODEV):
		return nil, fmt.Errorf("%s: %w", dir, ErrCgroupGone)
	case err != nil:
		return nil, err
	}
	return pids, nil
}

// RemoveTree removes dir and every cgroup below it, deepest first. rmdir(2)
// of a cgroup fails with EBUSY while it still has tasks or children, and it
// can stay busy for a moment after the last task died, so EBUSY is retried
// with a short backoff until ctx ends; give ctx a deadline. A directory
// that is already gone counts as removed.
func RemoveTree(ctx context.Context, dir string) error {
	if err := checkCgroupFS(dir, fsAny); err != nil {
		if errors.Is(err, ErrCgroupGone) {
			return nil
		}
		return fmt.Errorf("remove cgroup: %w", err)
	}
	dirs, err := cgroupDirs(dir)
	if err != nil {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	// WalkDir visits parents before children, so the reverse order is
	// deepest first.
	for _, d := range slices.Backward(dirs) {
		if err := rmdirBusy(ctx, d); err != nil {
			return fmt.Errorf("remove cgroup: %w", err)
		}
	}
	return nil
}

// cgroupDirs lists dir and every directory below it, parents first.
func cgroupDirs(dir string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	return dirs, err
}

// rmdirBusy removes one empty cgroup directory, retrying EBUSY until ctx ends.
func rmdirBusy(ctx context.Context, dir string) error {
	start := time.Now()
	for pause := time.Millisecond; ; pause = min(2*pause, maxPause) {
		err := unix.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case !errors.Is(err, unix.EBUSY):
			return &fs.PathError{Op: "rmdir", Path: dir, Err: err}
		}
		if ctxErr := sleepCtx(ctx, pause); ctxErr != nil {
			return fmt.Errorf("rmdir %s: still busy after %v (%w): %w",
				dir, time.Since(start).Round(time.Millisecond), ctxErr, unix.EBUSY)
		}
	}
}

// sleepCtx pauses for d or until ctx ends, whichever is first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// checkCgroupFS returns ErrCgroupGone when dir does not exist and
// ErrNotCgroup when it is not on a filesystem of the given kind.
func checkCgroupFS(dir string, kind fsKind) error {
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s: %w", dir, ErrCgroupGone)
		}
		return &fs.PathError{Op: "statfs", Path: dir, Err: err}
	}
	switch {
	case kind&fsV2 != 0 && sfs.Type == unix.CGROUP2_SUPER_MAGIC,
		kind&fsV1 != 0 && sfs.Type == unix.CGROUP_SUPER_MAGIC:
		return nil
	}
	want := map[fsKind]string{fsV1: "cgroup", fsV2: "cgroup2", fsAny: "cgroup or cgroup2"}[kind]
	return fmt.Errorf("%s: %w (filesystem magic %#x, want %s)", dir, ErrNotCgroup, sfs.Type, want)
}

// missingFile explains an ENOENT on dir/name: the cgroup is gone, or it
// lacks that file (err names which).
func missingFile(dir, name string, missing error) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", dir, ErrCgroupGone)
	}
	return fmt.Errorf("%s: %w", filepath.Join(dir, name), missing)
}

// writeCgroupFile writes value to dir/name in a single write(2), as cgroup
// interface files expect, without O_CREAT or O_TRUNC. ENOENT on the file
// becomes missing (or ErrCgroupGone when dir itself went away).
func writeCgroupFile(dir, name, value string, kind fsKind, missing error) error {
	if err := checkCgroupFS(dir, kind); err != nil {
		return err
	}
	path := filepath.Join(dir, name)
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return missingFile(dir, name, missing)
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	n, err := unix.Write(fd, []byte(value))
	switch {
	case errors.Is(err, unix.ENODEV), errors.Is(err, unix.ENOENT):
		// kernfs answers ENODEV for a file whose cgroup was removed
		// while it was open.
		return fmt.Errorf("%s: %w", dir, ErrCgroupGone)
	case err != nil:
		return &fs.PathError{Op: "write", Path: path, Err: err}
	case n != len(value):
		return &fs.PathError{Op: "write", Path: path, Err: unix.EIO}
	}
	return nil
}

// readCgroupFile reads dir/name with the same checks as writeCgroupFile.
func readCgroupFile(dir, name string, kind fsKind, missing error) ([]byte, error) {
	if err := checkCgroupFS(dir, kind); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, missingFile(dir, name, missing)
	case errors.Is(err, unix.ENODEV):
		return nil, fmt.Errorf("%s: %w", dir, ErrCgroupGone)
	case err != nil:
		return nil, err
	}
	return b, nil
}

// Populated reports whether any process lives in dir's v2 cgroup or below
// it (cgroup.events "populated"), so that a teardown can tell "killed what
// was there" from "there was nothing left".
func Populated(dir string) (bool, error) {
	b, err := readCgroupFile(dir, "cgroup.events", fsV2, ErrNotCgroup)
	if err != nil {
		return false, fmt.Errorf("populated: %w", err)
	}
	v, ok := eventValue(b, "populated")
	if !ok {
		return false, fmt.Errorf("populated: %s/cgroup.events has no populated line", dir)
	}
	return v != "0", nil
}

// ThawedV1 reports whether a v1 freezer cgroup reads THAWED (neither
// FROZEN nor on its way there, FREEZING).
func ThawedV1(dir string) (bool, error) {
	b, err := readCgroupFile(dir, "freezer.state", fsV1, ErrNotCgroup)
	if err != nil {
		return false, fmt.Errorf("freezer state: %w", err)
	}
	return string(bytes.TrimSpace(b)) == "THAWED", nil
}
