// Package proc reads the host: processes from /proc, cgroup state from
// cgroupfs, and unix-socket listeners from /proc/net/unix. It knows Linux and
// nothing about sandboxes, and it never signals anything.
package proc

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Identity names one process across time. A pid alone is not enough: the
// kernel recycles pids, so every place that remembers a process (selection,
// teardown plans, pinned pidfds, sticky attribution, the audit log) keys it
// by pid plus start time.
type Identity struct {
	PID int
	// Start is field 22 of /proc/PID/stat: clock ticks after boot.
	Start uint64
}

func (id Identity) String() string { return fmt.Sprintf("%d@%d", id.PID, id.Start) }

// Process is what one scan learned about one process. Fields that could not
// be read are left at their zero value and Partial is set.
type Process struct {
	PID, PPID, PGID, SID int
	// State is the one-letter state from /proc/PID/stat (R, S, D, Z, T, t, X, I…).
	State byte
	// Comm is the kernel's 15-byte task name; never match on it when argv
	// will do, because the kernel truncates it.
	Comm string
	// Argv is /proc/PID/cmdline split on NUL. Empty for kernel threads and
	// for a process first seen as a zombie; a zombie seen alive earlier
	// keeps the argv it had, so it stays attributed to its sandbox. Not
	// guaranteed to be UTF-8. Shared between snapshots: read-only.
	Argv []string
	// ArgvCut is true when the command line was longer than MaxArgvBytes:
	// Argv holds its first MaxArgvBytes bytes, the last argument maybe in
	// part.
	ArgvCut bool
	// Exe and Cwd are the targets of /proc/PID/{exe,cwd}; empty when unreadable.
	Exe, Cwd string
	// Start is the start time in clock ticks after boot (stat field 22).
	Start uint64
	// UID is the real uid from /proc/PID/status, -1 when unreadable.
	UID     int
	Threads int
	// RSS in bytes.
	RSS uint64
	// CPUTicks is utime+stime in clock ticks.
	CPUTicks uint64
	// Flags is the kernel's PF_* word (stat field 9).
	Flags uint
	// Cgroup is the cgroup v2 path ("0::" line of /proc/PID/cgroup), or ""
	// when the process is not in a v2 hierarchy.
	Cgroup string
	// Freezer is the v1 freezer cgroup path, or "" when there is no v1 freezer.
	Freezer string
	// NSpid lists the pid in each nested pid namespace, outermost first; more
	// than one entry means the process lives in a child pid namespace.
	NSpid []int
	// Kernel is true for kernel threads (PF_KTHREAD, or a child of kthreadd).
	Kernel bool
	// Partial is true when some field could not be read (usually EACCES as
	// a non-root user).
	Partial bool
	// Unread lists the fields a lazy scan did not read (see Options.Need):
	// they are left at their zero value, which then means "not read", not
	// "unreadable" (UID is 0 then, not -1). Zero after a full read.
	Unread Fields
}

// Fields names the fields of a Process that a lazy scan may leave unread:
// the ones that cost the most to read and that no cheap matcher needs.
// Every scan reads stat, cmdline and cgroup.
type Fields uint8

const (
	// FieldExe is Exe: a readlink of /proc/PID/exe.
	FieldExe Fields = 1 << iota
	// FieldCwd is Cwd: a readlink of /proc/PID/cwd.
	FieldCwd
	// FieldStatus is UID and NSpid: /proc/PID/status, the dearest file
	// of a process to read (the kernel walks its memory counters).
	FieldStatus

	// AllFields is every field a lazy scan may leave unread.
	AllFields = FieldExe | FieldCwd | FieldStatus
)

// ID returns the process's identity.
func (p *Process) ID() Identity { return Identity{PID: p.PID, Start: p.Start} }

// Zombie reports whether the process has exited and waits to be reaped.
func (p *Process) Zombie() bool { return p.State == 'Z' || p.State == 'X' }

// Stopped reports whether the process is stopped by a signal or a tracer.
func (p *Process) Stopped() bool { return p.State == 'T' || p.State == 't' }

// Proc returns the process with pid, or nil. It searches Procs, which
// are sorted by pid, so that a scan builds no index of its own: a map of
// every pid would be allocated and filled at every refresh, and marked by
// every collection, for the few lookups a steady refresh makes.
func (s *Snapshot) Proc(pid int) *Process {
	i, ok := slices.BinarySearchFunc(s.Procs, pid, func(p *Process, pid int) int { return cmp.Compare(p.PID, pid) })
	if !ok {
		return nil
	}
	return s.Procs[i]
}

// CgroupState is what cgroupfs says about one cgroup directory.
type CgroupState struct {
	// Frozen is cgroup.events "frozen 1" (v2) or freezer.state FROZEN or
	// FREEZING (v1).
	Frozen bool
	// Populated is cgroup.events "populated 1" (v2 only; v1 reports true).
	Populated bool
	// Exists is false when the directory could not be found.
	Exists bool
}

// Snapshot is one consistent-enough view of the host. Processes can be born
// and die during the scan; a process that vanished mid-read is simply absent.
type Snapshot struct {
	Time time.Time
	// BootTime is the wall-clock time of boot, for turning Start into a time.
	BootTime time.Time
	// ClockTicks is USER_HZ (sysconf(_SC_CLK_TCK)).
	ClockTicks uint64
	PageSize   uint64
	Hostname   string
	// Self is the pid of the scanning process (sandtop), as the scanned
	// /proc sees it.
	Self int
	// Procs is every process, sorted by pid (Proc relies on it).
	Procs []*Process
	// Cgroups maps a v2 cgroup path (as in Process.Cgroup) to its state, for
	// every path some process is in.
	Cgroups map[string]CgroupState
	// Freezers maps a v1 freezer path (as in Process.Freezer) to its state.
	Freezers map[string]CgroupState
	// Listeners holds the paths of unix sockets in the listening state
	// (abstract sockets start with "@"); nil when /proc/net/unix could not
	// be read, which is not the same as nothing listening.
	Listeners map[string]bool
	// Mounts says where the cgroup hierarchies are mounted.
	Mounts Mounts
	// Settled is the cgroups the scan was told to settle (ScanHints):
	// the memory counters of their processes may be older than the scan.
	Settled map[string]bool
	// PartlyUnreadable counts processes with Partial set.
	PartlyUnreadable int
	// Carried lists, ascending, the pids whose stat is the one an earlier
	// scan read (ScanHints.Aside): their CPU time, memory and state may be
	// older than the snapshot.
	Carried []int
	// Host is the machine's load, memory and CPU time; nil when the procfs
	// has no such files (a fixture tree) or they could not be read.
	Host *Host
	// Resources holds what the cgroup files of sandboxes say, by cgroup,
	// for the cgroups a ResourceReader was asked about; nil when none was.
	Resources map[CgroupKey]*CgroupResources
	// Wchans names the kernel function each process in uninterruptible
	// sleep (state D) waits in, by pid, for the processes a
	// ResourceReader was asked about.
	Wchans map[int]string
	// OOMKills are the kernel log's OOM kills a ResourceReader has read
	// (nil when /dev/kmsg is not readable).
	OOMKills []OOMKill
	// NetnsOf is the network namespace (its inode) of each process a
	// NetworkReader was asked about, and Networks those namespaces; nil
	// when none was (the screen reads them for its detail pane only).
	NetnsOf  map[int]uint64
	Networks map[uint64]*NetNS
}

// NamespaceInit reports whether nspid, a process's NSpid, is that of the
// init of a pid namespace below the reader's: more than one entry, the
// last of them 1.
func NamespaceInit(nspid []int) bool { return len(nspid) > 1 && nspid[len(nspid)-1] == 1 }

// StartTime turns a process's Start ticks into wall-clock time.
func (s *Snapshot) StartTime(p *Process) time.Time {
	if s.ClockTicks == 0 {
		return s.BootTime
	}
	return s.BootTime.Add(time.Duration(p.Start) * time.Second / time.Duration(s.ClockTicks))
}

// IsCarried reports whether the snapshot carried the process's stat from
// an earlier scan (see Carried).
func (s *Snapshot) IsCarried(p *Process) bool {
	_, ok := slices.BinarySearch(s.Carried, p.PID)
	return ok
}

// CPUSeconds is a process's utime+stime in seconds.
func (s *Snapshot) CPUSeconds(p *Process) float64 {
	if s.ClockTicks == 0 {
		return 0
	}
	return float64(p.CPUTicks) / float64(s.ClockTicks)
}

// Mounts locates the cgroup hierarchies, as found in /proc/self/mountinfo.
type Mounts struct {
	// Unified is the cgroup2 mount point ("" when there is none).
	Unified string
	// Freezer is the v1 freezer mount point ("" when there is none).
	Freezer string
	// UnifiedRoot and FreezerRoot are the cgroup paths mounted at Unified and
	// Freezer (mountinfo field 4): "/" for a whole hierarchy, a subtree for a
	// bind mount. "" is taken as "/".
	UnifiedRoot, FreezerRoot string
	// V1 locates the v1 resource controllers, for the figures a hybrid
	// host keeps there rather than in cgroup2 (see CgroupResources).
	V1 V1Mounts
}

// V1Mounts are the mount points of the v1 hierarchies that hold resource
// figures, "" for one not mounted. Only a mount of a hierarchy's root
// counts: a bind mount of a subtree (a container's view) does not reach
// the paths a sandbox's cgroup is named by.
type V1Mounts struct {
	Memory, CPU, CPUAcct, PIDs, Blkio string
}

// add records a v1 mount by the controllers in its super options
// ("rw,cpu,cpuacct" for a joint mount); the first mount of each wins.
func (v *V1Mounts) add(mountPoint, options string) {
	for _, c := range []struct {
		name string
		to   *string
	}{{"memory", &v.Memory}, {"cpu", &v.CPU}, {"cpuacct", &v.CPUAcct}, {"pids", &v.PIDs}, {"blkio", &v.Blkio}} {
		if *c.to == "" && hasOption(options, c.name) {
			*c.to = mountPoint
		}
	}
}

// points lists the fields, for rewriting them all.
func (v *V1Mounts) points() []*string {
	return []*string{&v.Memory, &v.CPU, &v.CPUAcct, &v.PIDs, &v.Blkio}
}
