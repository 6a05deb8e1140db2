package fleet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"

	"github.com/sandtop/sandtop/proc"
)

// gone reports whether err means the process (or file) no longer exists,
// which is a normal event for anything that reads /proc.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// readStat reads /proc/PID/stat.
func readStat(pid int) (procfs.ProcStat, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procfs.ProcStat{}, fmt.Errorf("open /proc/%d: %w", pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return procfs.ProcStat{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// identityOf returns the process's identity (pid + stat field 22).
func identityOf(pid int) (proc.Identity, error) {
	st, err := readStat(pid)
	if err != nil {
		return proc.Identity{}, err
	}
	return proc.Identity{PID: pid, Start: st.Starttime}, nil
}

// lookup returns the stat of the process named by id, or ok=false when no
// process with that pid and start time exists (any more).
func lookup(id proc.Identity) (st procfs.ProcStat, ok bool, err error) {
	st, err = readStat(id.PID)
	if gone(err) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	return st, st.Starttime == id.Start, nil
}

// selfPID returns this process's pid as the mounted /proc sees it. Inside a
// child pid namespace os.Getpid() is the namespace-local pid, but /proc is
// the host's, and /proc/self resolves in the pid namespace of the procfs
// mount (proc(5), "/proc/self"), so this is the host pid the manifest needs.
func selfPID() (int, error) {
	link, err := os.Readlink("/proc/self")
	if err != nil {
		return 0, fmt.Errorf("resolve /proc/self: %w", err)
	}
	pid, err := strconv.Atoi(link)
	if err != nil {
		return 0, fmt.Errorf("parse /proc/self -> %q: %w", link, err)
	}
	return pid, nil
}

// children lists the children of pid, over all its threads. The kernel
// prints them in the pid namespace of the procfs mount
// (Documentation/filesystems/proc.rst, "/proc/<pid>/task/<tid>/children").
func children(pid int) ([]int, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if gone(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", t, err)
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// nestedPidNS reports whether this process lives in a child pid namespace
// of the one /proc was mounted in: its NSpid line then has more than one
// entry (proc(5), "NSpid").
func nestedPidNS(self int) (bool, error) {
	p, err := procfs.NewProc(self)
	if err != nil {
		return false, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return false, fmt.Errorf("read /proc/%d/status: %w", self, err)
	}
	return len(st.NSpids) > 1, nil
}

// hostPID turns the pid of one of our children, as this process's pid
// namespace numbers it, into the pid the mounted /proc shows. They differ
// only when this process lives in a nested pid namespace: then the child's
// NSpid line ends with the local pid.
func hostPID(self int, nested bool, local int) (int, error) {
	if !nested {
		return local, nil
	}
	kids, err := children(self)
	if err != nil {
		return 0, err
	}
	for _, k := range kids {
		p, err := procfs.NewProc(k)
		if err != nil {
			continue
		}
		st, err := p.NewStatus()
		if err != nil || len(st.NSpids) == 0 {
			continue
		}
		if int(st.NSpids[len(st.NSpids)-1]) == local {
			return k, nil
		}
	}
	return 0, fmt.Errorf("no child of %d has namespace pid %d", self, local)
}
