package fleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// cgroupMounts locates the hierarchies sandsim uses, as found in
// /proc/self/mountinfo. Root is the mountinfo "root" field: the path inside
// the hierarchy that the mount point shows, so that a directory on disk can
// be turned into the path /proc/PID/cgroup prints.
type cgroupMounts struct {
	Unified, UnifiedRoot string
	Freezer, FreezerRoot string
}

// findCgroupMounts picks the first cgroup2 mount and the first v1 mount
// carrying the freezer controller.
func findCgroupMounts(mounts []*procfs.MountInfo) cgroupMounts {
	var out cgroupMounts
	for _, m := range mounts {
		switch {
		case m.FSType == "cgroup2" && out.Unified == "":
			out.Unified, out.UnifiedRoot = m.MountPoint, m.Root
		case m.FSType == "cgroup" && out.Freezer == "":
			if _, ok := m.SuperOptions["freezer"]; ok {
				out.Freezer, out.FreezerRoot = m.MountPoint, m.Root
			}
		}
	}
	return out
}

// procCgroups is a process's membership from /proc/PID/cgroup: the v2 path
// (the "0::" line) and the v1 path of each named controller.
type procCgroups struct {
	Unified string
	V1      map[string]string
}

// readProcCgroup reads /proc/PID/cgroup (cgroups(7), "/proc/[pid]/cgroup").
func readProcCgroup(pid int) (procCgroups, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procCgroups{}, err
	}
	cgs, err := p.Cgroups()
	if err != nil {
		return procCgroups{}, fmt.Errorf("read /proc/%d/cgroup: %w", pid, err)
	}
	return membership(cgs), nil
}

// membership sorts /proc/PID/cgroup lines into the v2 path (hierarchy ID
// 0, no controllers) and the path of each v1 controller.
func membership(cgs []procfs.Cgroup) procCgroups {
	out := procCgroups{V1: map[string]string{}}
	for _, c := range cgs {
		if c.HierarchyID == 0 && len(c.Controllers) == 0 {
			out.Unified = c.Path
			continue
		}
		for _, ctrl := range c.Controllers {
			out.V1[ctrl] = c.Path
		}
	}
	return out
}

// hierarchy is one cgroup hierarchy in which the fleet made a directory of
// its own (top) and, below it, one per sandbox.
type hierarchy struct {
	mount, mountRoot string
	top              string
	// made lists every directory created, parents before children.
	made []string
}

// path turns a directory on disk into the path /proc/PID/cgroup shows.
func (h *hierarchy) path(dir string) string {
	rel, err := filepath.Rel(h.mount, dir)
	if err != nil || rel == "." {
		return h.mountRoot
	}
	return filepath.Join(h.mountRoot, rel)
}

// openHierarchy makes the fleet's top directory, named name, in the
// hierarchy mounted at mount. It tries the root of the hierarchy first and
// the caller's own cgroup second (a delegated subtree when not root), and
// proves the place usable by moving the calling process into a probe
// directory and back: moving needs write access to cgroup.procs of the
// common ancestor (cgroup-v2.rst, "Delegation Containment"), which mkdir
// alone does not show.
func openHierarchy(mount, mountRoot, self, name string) (*hierarchy, error) {
	// The caller's own cgroup directory, where the probe returns it.
	home := mount
	if rel, err := filepath.Rel(mountRoot, self); err == nil && !strings.HasPrefix(rel, "..") {
		home = filepath.Join(mount, rel)
	}
	var errs []error
	for _, parent := range slices.Compact([]string{mount, home}) {
		h := &hierarchy{mount: mount, mountRoot: mountRoot, top: filepath.Join(parent, name)}
		err := h.probe(home)
		if err == nil {
			return h, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func (h *hierarchy) probe(home string) error {
	if err := os.Mkdir(h.top, 0o755); err != nil {
		return fmt.Errorf("fleet cgroup: %w", err)
	}
	h.made = append(h.made, h.top)
	probe := filepath.Join(h.top, "probe")
	err := os.Mkdir(probe, 0o755)
	if err == nil {
		err = joinCgroup(probe, 0)
		if err == nil {
			err = joinCgroup(home, 0)
		}
		if rmErr := os.Remove(probe); err == nil {
			err = rmErr
		}
	}
	if err != nil {
		_ = os.Remove(h.top)
		h.made = nil
		return fmt.Errorf("cgroup %s not usable: %w", h.top, err)
	}
	return nil
}

// mkdir creates rel (slash-separated) below the fleet's top directory and
// records every directory it made.
func (h *hierarchy) mkdir(rel string) (string, error) {
	dir := h.top
	for _, part := range strings.Split(rel, "/") {
		dir = filepath.Join(dir, part)
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("sandbox cgroup: %w", err)
		}
		h.made = append(h.made, dir)
	}
	return dir, nil
}

// removeCgroupDirs removes cgroup directories deepest first. rmdir of a
// cgroup fails with EBUSY while a task is still attached; right after
// SIGKILL the dying tasks may still be there for a moment, so it retries
// until the deadline.
func removeCgroupDirs(dirs []string, deadline time.Time) error {
	sorted := slices.Clone(dirs)
	slices.SortStableFunc(sorted, func(a, b string) int {
		return strings.Count(b, "/") - strings.Count(a, "/")
	})
	var errs []error
	for _, d := range sorted {
		for {
			err := syscall.Rmdir(d)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			if errors.Is(err, syscall.EBUSY) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
			break
		}
	}
	return errors.Join(errs...)
}

// joinCgroup moves pid (0: the caller) into the cgroup at dir. Writing to
// cgroup.procs moves the whole thread group in v1 and v2 alike.
func joinCgroup(dir string, pid int) error {
	f := filepath.Join(dir, "cgroup.procs")
	if err := writeKnob(f, strconv.Itoa(pid)); err != nil {
		return fmt.Errorf("join %s: %w", dir, err)
	}
	return nil
}

// cgroupProcs lists the pids in one cgroup directory (not its children).
func cgroupProcs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids, nil
}

// errNoCgroupKill means the kernel predates cgroup.kill (added in 5.14).
var errNoCgroupKill = errors.New("cgroup.kill not supported")

// killCgroup SIGKILLs every process in a v2 cgroup and its descendants at
// once (cgroup-v2.rst, "cgroup.kill"), whatever their pid namespaces or
// process groups; it also kills frozen tasks.
func killCgroup(dir string) error {
	err := writeKnob(filepath.Join(dir, "cgroup.kill"), "1")
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrNotExist):
		if _, statErr := os.Stat(dir); statErr != nil {
			return nil // the cgroup itself is gone: nothing to kill
		}
		return errNoCgroupKill
	default:
		return fmt.Errorf("cgroup.kill %s: %w", dir, err)
	}
}

// setFrozen freezes or thaws a cgroup and waits until the kernel reports
// the new state: v2 "frozen 0|1" in cgroup.events, v1 freezer.state
// FROZEN/THAWED (the write returns while the state may still be FREEZING,
// cgroup-v1/freezer-subsystem.rst).
func setFrozen(dir string, v1, frozen bool, timeout time.Duration) error {
	file, value, want := "cgroup.freeze", "0", "frozen 0"
	if frozen {
		value, want = "1", "frozen 1"
	}
	check := "cgroup.events"
	if v1 {
		file, value, want = "freezer.state", "THAWED", "THAWED"
		if frozen {
			value, want = "FROZEN", "FROZEN"
		}
		check = "freezer.state"
	}
	if err := writeKnob(filepath.Join(dir, file), value); err != nil {
		return fmt.Errorf("write %s=%s in %s: %w", file, value, dir, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(filepath.Join(dir, check))
		if err != nil {
			return fmt.Errorf("read %s in %s: %w", check, dir, err)
		}
		if hasLine(b, want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not %q after %v", dir, check, want, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func hasLine(b []byte, line string) bool {
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// writeKnob writes a value to an existing kernel file (a cgroup control
// file, /proc/self/comm) in one write. It never creates the file: on
// cgroupfs, O_CREAT on a missing control file fails with EACCES instead of
// ENOENT (the directory refuses new files), which would hide "not there".
func writeKnob(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
