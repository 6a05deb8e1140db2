package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
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

// statBufs lends stat buffers to the one-off readers below, which teardown
// calls in loops over a sandbox's processes.
var statBufs = sync.Pool{New: func() any { return new([statBufSize]byte) }}

// readStatOnce reads and parses procRoot/PID/stat with open/read/close. The
// pid is the directory's, as procfs has it.
func readStatOnce(procRoot string, pid int) (procfs.ProcStat, error) {
	buf := statBufs.Get().(*[statBufSize]byte)
	defer statBufs.Put(buf)
	var st procfs.ProcStat
	if err := readStatFile(appendStatPath(nil, procRoot, pid), buf[:], &st); err != nil {
		return procfs.ProcStat{}, fmt.Errorf("read pid %d stat: %w", pid, err)
	}
	st.PID = pid
	return st, nil
}

// ReadIdentity reads /proc/PID/stat once and returns the process's identity
// and its one-letter state. A vanished pid gives an error for which
// IsVanished is true.
func ReadIdentity(procRoot string, pid int) (Identity, byte, error) {
	st, err := readStatOnce(procRoot, pid)
	if err != nil {
		return Identity{}, 0, err
	}
	return Identity{PID: st.PID, Start: st.Starttime}, stateOf(st), nil
}

// Stat is one read of /proc/PID/stat: what teardown checks about a process
// right before it acts on it.
type Stat struct {
	PID, PPID int
	Comm      string
	State     byte
	Flags     uint
	Threads   int
	Start     uint64
}

// Zombie reports whether the whole process has exited and waits to be
// reaped. A thread-group leader that called pthread_exit also shows state Z
// while its other threads still run; that is no zombie.
func (s Stat) Zombie() bool {
	return (s.State == 'Z' || s.State == 'X') && s.Threads <= 1
}

// ReadStat reads /proc/PID/stat once, without any cache, with the parser
// the scanner uses. A vanished pid gives an error for which IsVanished is
// true.
func ReadStat(procRoot string, pid int) (Stat, error) {
	st, err := readStatOnce(procRoot, pid)
	if err != nil {
		return Stat{}, err
	}
	return Stat{PID: pid, PPID: st.PPID, Comm: st.Comm, State: stateOf(st), Flags: st.Flags, Threads: st.NumThreads, Start: st.Starttime}, nil
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
	argv            []string
	argvCut         bool
	exe, cwd        string
	uid             int
	cgroup, freezer string
	nspid           []int
	partial         bool
	// unread are the fields a lazy scan left unread.
	unread Fields
	// argvLate: see cacheEntry.argvLate.
	argvLate bool
}

// readCounts counts file reads by kind, for tests and benchmarks that prove
// what a refresh touches.
type readCounts struct {
	stat, status, cmdline, cgroup, exe, cwd int
	// list counts listings of the pid directories.
	list int
}

func (c *readCounts) add(o readCounts) {
	c.stat += o.stat
	c.status += o.status
	c.cmdline += o.cmdline
	c.cgroup += o.cgroup
	c.exe += o.exe
	c.cwd += o.cwd
	c.list += o.list
}

// fillProcess sets *p from a stat and the static fields read for it. The
// slices in sf are shared, never copied: a Snapshot and everything in it is
// read-only once returned.
func fillProcess(p *Process, st *pidStat, sf *static, kernel bool, pageSize uint64) {
	*p = Process{}
	setStatic(p, sf)
	setStat(p, st, kernel, pageSize)
}

// setStatic sets the fields of p that are read once per identity.
func setStatic(p *Process, sf *static) {
	p.Argv, p.ArgvCut, p.Exe, p.Cwd, p.UID = sf.argv, sf.argvCut, sf.exe, sf.cwd, sf.uid
	p.Cgroup, p.Freezer, p.NSpid = sf.cgroup, sf.freezer, sf.nspid
	p.Partial, p.Unread = sf.partial, sf.unread
}

// staticOf is the static fields p carries, as setStatic set them.
func staticOf(p *Process) static {
	return static{
		argv: p.Argv, argvCut: p.ArgvCut, exe: p.Exe, cwd: p.Cwd, uid: p.UID,
		cgroup: p.Cgroup, freezer: p.Freezer, nspid: p.NSpid, partial: p.Partial, unread: p.Unread,
	}
}

// setStat sets the fields of p that every stat read refreshes.
func setStat(p *Process, st *pidStat, kernel bool, pageSize uint64) {
	p.PID, p.PPID, p.PGID, p.SID = st.pid, st.ppid, st.pgrp, st.session
	p.State, p.Comm, p.Start = st.state, st.comm, st.start
	p.Threads, p.RSS, p.CPUTicks, p.Flags = st.threads, uint64(max(st.rss, 0))*pageSize, st.cpuTicks, st.flags
	p.Kernel = kernel
}

// statOf is the stat setStat made p from, but for the startcode, which a
// Process does not carry; a stat whose rss read negative comes back as 0,
// which setStat makes the same Process of.
func statOf(p *Process, startCode, pageSize uint64) pidStat {
	return pidStat{
		pid: p.PID, ppid: p.PPID, pgrp: p.PGID, session: p.SID, threads: p.Threads,
		state: p.State, comm: p.Comm, flags: p.Flags, cpuTicks: p.CPUTicks,
		start: p.Start, startCode: startCode, rss: int(p.RSS / pageSize),
	}
}

// sameStat reports whether fillProcess with st would give p again, given
// that p was filled from the same cache entry (so its static fields are
// the entry's): every field stat feeds is compared.
func sameStat(p *Process, st *pidStat, kernel bool, pageSize uint64) bool {
	return p.PID == st.pid && p.PPID == st.ppid && p.PGID == st.pgrp && p.SID == st.session &&
		p.State == st.state && p.Comm == st.comm && p.Start == st.start &&
		p.Threads == st.threads && p.RSS == uint64(max(st.rss, 0))*pageSize &&
		p.CPUTicks == st.cpuTicks && p.Flags == st.flags && p.Kernel == kernel
}
