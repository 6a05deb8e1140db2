package fleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc"
)

// cleanup is what a teardown must remove: the processes by identity, the
// cgroup directories the owner made and the temp directory. The owner runs
// it on exit; Close runs it too when the owner died without doing so.
type cleanup struct {
	procs      []proc.Identity
	cgroupDirs []string
	base       string
	// reap waits for whatever exited children the caller may reap.
	reap func()
	// sweep, when set, SIGKILLs what is left below the caller and returns
	// how many processes are left; the owner sweeps its whole subtree.
	sweep func() int
}

// cleanupOf lists what a manifest says the fleet made.
func cleanupOf(m *Manifest) cleanup {
	c := cleanup{cgroupDirs: m.CgroupDirs, base: m.Base}
	for _, p := range m.Processes() {
		c.procs = append(c.procs, p.Identity)
	}
	return c
}

// run kills everything and removes every directory, then reports what
// survived. Order matters: thaw first, because a task frozen by the v1
// freezer does not act on SIGKILL until thawed (cgroup-v1/freezer-subsystem.rst);
// then cgroup.kill, which reaches members whatever their pid namespace;
// then each known identity through a pinned pidfd for processes outside
// any cgroup; then wait for every process to be gone and reaped before the
// cgroup directories can be removed (rmdir fails with EBUSY while tasks
// remain).
func (c cleanup) run(timeout time.Duration) []error {
	deadline := time.Now().Add(timeout)
	var errs []error
	for _, dir := range c.cgroupDirs {
		if err := thaw(dir); err != nil {
			errs = append(errs, err)
		}
	}
	for _, dir := range c.cgroupDirs {
		// v1 directories have no cgroup.kill; killCgroupMembers covers them.
		if err := killCgroup(dir); err != nil && !errors.Is(err, errNoCgroupKill) {
			errs = append(errs, err)
		}
	}
	for _, id := range c.procs {
		if err := signalID(id, unix.SIGKILL); err != nil && !errors.Is(err, errNotThere) {
			errs = append(errs, err)
		}
	}
	for {
		// Kill again what cgroup.procs still lists, until nothing lives:
		// the fork loop may have started a child after the first round.
		killed, err := killCgroupMembers(c.cgroupDirs)
		if c.reap != nil {
			c.reap()
		}
		left := killed + len(aliveOf(c.procs))
		if c.sweep != nil {
			left += c.sweep()
		}
		if left == 0 || time.Now().After(deadline) {
			if err != nil {
				errs = append(errs, err)
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := removeCgroupDirs(c.cgroupDirs, deadline); err != nil {
		errs = append(errs, err)
	}
	if c.base != "" {
		if err := os.RemoveAll(c.base); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", c.base, err))
		}
	}
	return append(errs, c.leaks()...)
}

// leaks reports every process, cgroup directory and file that survived.
func (c cleanup) leaks() []error {
	var errs []error
	for _, a := range aliveOf(c.procs) {
		errs = append(errs, fmt.Errorf("process %s survived (state %s)", a.id, a.state))
	}
	for _, d := range c.cgroupDirs {
		if _, err := os.Stat(d); err == nil {
			errs = append(errs, fmt.Errorf("cgroup %s survived", d))
		}
	}
	if c.base != "" {
		if _, err := os.Stat(c.base); err == nil {
			errs = append(errs, fmt.Errorf("directory %s survived", c.base))
		}
	}
	return errs
}

type aliveProc struct {
	id    proc.Identity
	state string
}

// aliveOf returns the identities that still name a process, zombies
// included: a zombie nobody reaps is a leak too.
func aliveOf(ids []proc.Identity) []aliveProc {
	var out []aliveProc
	for _, id := range ids {
		st, ok, err := lookup(id)
		if err == nil && ok {
			out = append(out, aliveProc{id: id, state: st.State})
		}
	}
	return out
}

// thaw unfreezes a cgroup directory of either version; a directory that is
// gone needs no thawing.
func thaw(dir string) error {
	file, value := filepath.Join(dir, "cgroup.freeze"), "0"
	if _, err := os.Stat(filepath.Join(dir, "freezer.state")); err == nil {
		file, value = filepath.Join(dir, "freezer.state"), "THAWED"
	}
	err := writeKnob(file, value)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("thaw %s: %w", dir, err)
}

// killCgroupMembers SIGKILLs every live process listed in the directories'
// cgroup.procs, which catches processes sandsim never named (the fork
// loop's children) where cgroup.kill is missing (v1, kernels before 5.14).
// Each pid is pinned with a pidfd and then looked up in cgroup.procs
// again: if it is still listed, the pinned process is the member, so a
// recycled pid is never hit. It returns how many live members it found.
func killCgroupMembers(dirs []string) (int, error) {
	var errs []error
	n := 0
	for _, dir := range dirs {
		pids, err := cgroupProcs(dir)
		if err != nil {
			continue // gone, or not readable: nothing we can list
		}
		for _, pid := range pids {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			if now, _ := cgroupProcs(dir); slices.Contains(now, pid) {
				if st, err := readStat(pid); err == nil && st.State != "Z" {
					n++
					if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
						errs = append(errs, fmt.Errorf("SIGKILL %d in %s: %w", pid, dir, err))
					}
				}
			}
			unix.Close(fd)
		}
	}
	return n, errors.Join(errs...)
}
