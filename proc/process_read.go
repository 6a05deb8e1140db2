package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"

	"github.com/prometheus/procfs"
)

// pfKthread is PF_KTHREAD from include/linux/sched.h, set in the flags word
// (stat field 9) of every kernel thread.
const pfKthread = 0x00200000

// IsVanished reports whether err says a process (or one of its threads) is
// gone: ENOENT from its /proc files, or ESRCH, which some /proc files return
// once the task has exited but before its directory disappears. A vanished
// process is a normal event, not a failure.
func IsVanished(err error) bool {
	return err != nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH))
}

// readStat is the only place that reads /proc/PID/stat, the one file a refresh
// reads for a process it already knows. Keep it that way: it is the seam for
// replacing the open/read/close with a pread on a held descriptor.
func readStat(p procfs.Proc) (procfs.ProcStat, error) {
	return p.Stat()
}

// ReadIdentity reads /proc/PID/stat once and returns the process's identity
// and its one-letter state. A vanished pid gives an error for which
// IsVanished is true.
func ReadIdentity(procRoot string, pid int) (Identity, byte, error) {
	_, _, st, err := openProc(procRoot, pid)
	if err != nil {
		return Identity{}, 0, err
	}
	return Identity{PID: st.PID, Start: st.Starttime}, stateOf(st), nil
}

// ReadProcess reads everything sandtop knows about one pid, without any
// cache: teardown uses it to re-check a process right before acting. A
// vanished pid (including one that vanished while being read) gives an error
// for which IsVanished is true.
func ReadProcess(procRoot string, pid int) (*Process, error) {
	fsys, p, st, err := openProc(procRoot, pid)
	if err != nil {
		return nil, err
	}
	mounts, err := readMounts(procRoot)
	if err != nil {
		return nil, fmt.Errorf("read pid %d: %w", pid, err)
	}
	kthreadd := false
	if st.PID == 2 || st.PPID == 2 {
		kthreadd = pid2IsKthreadd(fsys)
	}
	kernel := isKernel(st, kthreadd)
	var reads readCounts
	sf, gone := readStatic(p, st, kernel, mounts, &reads)
	if gone {
		return nil, fmt.Errorf("read pid %d: %w", pid, fs.ErrNotExist)
	}
	return newProcess(st, sf, kernel, uint64(os.Getpagesize())), nil
}

func openProc(procRoot string, pid int) (procfs.FS, procfs.Proc, procfs.ProcStat, error) {
	fsys, err := procfs.NewFS(procRoot)
	if err != nil {
		return procfs.FS{}, procfs.Proc{}, procfs.ProcStat{}, fmt.Errorf("open %s: %w", procRoot, err)
	}
	p, err := fsys.Proc(pid)
	if err != nil {
		return procfs.FS{}, procfs.Proc{}, procfs.ProcStat{}, fmt.Errorf("read pid %d: %w", pid, err)
	}
	st, err := readStat(p)
	if err != nil {
		return procfs.FS{}, procfs.Proc{}, procfs.ProcStat{}, fmt.Errorf("read pid %d stat: %w", pid, err)
	}
	return fsys, p, st, nil
}

func pid2IsKthreadd(fsys procfs.FS) bool {
	p, err := fsys.Proc(2)
	if err != nil {
		return false
	}
	st, err := readStat(p)
	return err == nil && isKthreadd(st)
}

// isKthreadd reports whether st is kthreadd, the parent of all kernel
// threads. Inside a pid namespace (a container's /proc) pid 2 is an ordinary
// process, and its children must not be taken for kernel threads.
func isKthreadd(st procfs.ProcStat) bool {
	return st.PID == 2 && (st.Flags&pfKthread != 0 || st.Comm == "kthreadd")
}

// isKernel reports whether st is a kernel thread: PF_KTHREAD, or kthreadd
// itself, or one of its children. The flag alone is exact on real kernels;
// the kthreadd rule is a second opinion. Its known cost: a usermode helper
// (kernel/umh.c forks it with CLONE_PARENT, so its parent is kthreadd; e.g.
// modprobe or a core_pattern pipe handler) counts as a kernel thread, and
// its argv is not read.
func isKernel(st procfs.ProcStat, kthreaddAt2 bool) bool {
	return st.Flags&pfKthread != 0 || kthreaddAt2 && (st.PID == 2 || st.PPID == 2)
}

func stateOf(st procfs.ProcStat) byte {
	if st.State == "" {
		return '?'
	}
	return st.State[0]
}

// static holds the fields of a process that do not change while it runs the
// same program, so a scanner reads them once per identity (see scan_cache.go).
type static struct {
	// comm and startCode (stat field 26) as of the read, to notice an execve
	// (see scanCache.lookup).
	comm            string
	startCode       uint64
	argv            []string
	exe, cwd        string
	uid             int
	cgroup, freezer string
	nspid           []int
	partial         bool
}

// readCounts counts file reads by kind, for tests and benchmarks that prove
// what a refresh touches.
type readCounts struct {
	stat, status, cmdline, cgroup, exe, cwd int
}

// static returns how many files other than stat were read.
func (c readCounts) static() int { return c.status + c.cmdline + c.cgroup + c.exe + c.cwd }

// readStatic reads the static fields of the process whose stat is st. It
// reports gone when the process vanished meanwhile (or its pid was reused),
// in which case the process must be left out of the scan.
//
// Each field is read on its own so that one failure costs only that field:
// a permission error (exe and cwd need ptrace access, proc(5)) or a parse
// error leaves it empty and sets partial. A missing file is ambiguous: the
// process may have exited, or the file may simply not exist (a fixture, an
// old kernel). A second read of stat tells them apart: if the same identity
// is still there, the file was missing and the field stays empty.
func readStatic(p procfs.Proc, st procfs.ProcStat, kernel bool, m Mounts, n *readCounts) (static, bool) {
	sf := static{comm: st.Comm, startCode: st.StartCode, uid: -1}
	if kernel {
		// Kernel threads have no argv, exe, cwd or cgroup of interest, and run
		// as root in the initial namespaces, so status is not worth a read.
		sf.uid = 0
		return sf, false
	}
	missing := false
	note := func(err error) {
		switch {
		case err == nil:
		case IsVanished(err):
			missing = true
		default:
			sf.partial = true
		}
	}
	if s := stateOf(st); s != 'Z' && s != 'X' {
		// A zombie has released its memory and files: cmdline reads empty and
		// exe/cwd do not resolve (ENOENT), which would look like a vanished
		// process. Skip them rather than mistake the one for the other.
		n.cmdline++
		argv, err := p.CmdLine()
		note(err)
		if len(argv) > 0 {
			sf.argv = argv
		}
		n.exe++
		exe, err := p.Executable() // "" without error when the link is missing
		note(err)
		sf.exe = exe
		n.cwd++
		cwd, err := p.Cwd()
		note(err)
		sf.cwd = cwd
	}
	n.status++
	status, err := p.NewStatus()
	note(err)
	if err == nil {
		sf.uid = int(status.UIDs[0])
		if len(status.NSpids) > 0 {
			sf.nspid = make([]int, len(status.NSpids))
			for i, v := range status.NSpids {
				sf.nspid[i] = int(v)
			}
		}
	}
	n.cgroup++
	cgroups, err := p.Cgroups()
	note(err)
	sf.cgroup, sf.freezer = pickCgroups(cgroups, m)
	if missing {
		n.stat++
		again, err := readStat(p)
		if err != nil || again.Starttime != st.Starttime {
			return static{}, true
		}
		sf.partial = true
	}
	return sf, false
}

// pickCgroups picks the v2 path (the "0::" line, cgroups(7)) and the v1
// freezer path out of /proc/PID/cgroup. A hierarchy that is not mounted gives
// "": on a v1-only host every process still shows "0::/", which means nothing.
func pickCgroups(cgroups []procfs.Cgroup, m Mounts) (v2, freezer string) {
	for _, cg := range cgroups {
		switch {
		case cg.HierarchyID == 0 && len(cg.Controllers) == 0:
			if m.Unified != "" {
				v2 = cg.Path
			}
		case slices.Contains(cg.Controllers, "freezer"):
			if m.Freezer != "" {
				freezer = cg.Path
			}
		}
	}
	return v2, freezer
}

// newProcess builds a fresh Process from this scan's stat and the (possibly
// cached) static fields. The slices in sf are shared, never copied: a
// Snapshot and everything in it is read-only once returned.
func newProcess(st procfs.ProcStat, sf static, kernel bool, pageSize uint64) *Process {
	return &Process{
		PID:      st.PID,
		PPID:     st.PPID,
		PGID:     st.PGRP,
		SID:      st.Session,
		State:    stateOf(st),
		Comm:     st.Comm,
		Argv:     sf.argv,
		Exe:      sf.exe,
		Cwd:      sf.cwd,
		Start:    st.Starttime,
		UID:      sf.uid,
		Threads:  st.NumThreads,
		RSS:      uint64(max(st.RSS, 0)) * pageSize,
		CPUTicks: uint64(st.UTime) + uint64(st.STime),
		Flags:    st.Flags,
		Cgroup:   sf.cgroup,
		Freezer:  sf.freezer,
		NSpid:    sf.nspid,
		Kernel:   kernel,
		Partial:  sf.partial,
	}
}
