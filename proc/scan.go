package proc

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// userHZ is USER_HZ, the unit of every tick count in /proc. Go has no
// sysconf(_SC_CLK_TCK) without cgo (x/sys does not wrap it), but the kernel
// fixes USER_HZ at 100 on every Linux architecture (include/asm-generic/param.h
// and the arch overrides; times(2)), which procfs relies on too.
const userHZ = 100

// Options configure a Scanner.
type Options struct {
	// ProcRoot is where procfs is mounted; "" means "/proc". Tests point it at
	// fixture trees.
	ProcRoot string
	// SysRoot is prepended to the cgroup mount points found in mountinfo, so
	// fixture trees can carry a fake cgroupfs (e.g.
	// proc/testdata/<case>/sys/fs/cgroup/unified/...). Default "".
	SysRoot string
}

// Scanner reads snapshots of the host. It caches the static fields of each
// process by identity (see scan_cache.go), so keep one scanner per refresh
// loop. Its methods may be called from several goroutines; scans are
// serialised.
type Scanner struct {
	root     string
	fs       procfs.FS
	mounts   Mounts
	bootTime time.Time
	self     int
	pageSize uint64

	mu    sync.Mutex
	gen   uint64
	cache scanCache
	// reads counts the files the last Scan read, by kind.
	reads readCounts
	// testHookAfterStat, when set, runs between reading every stat and reading
	// the static fields, so tests can make a process vanish mid-scan.
	testHookAfterStat func()
}

// NewScanner opens the procfs at opts.ProcRoot and reads what does not change
// while the host runs: the cgroup mounts, the boot time, and the scanner's
// own pid.
func NewScanner(opts Options) (*Scanner, error) {
	root := cmp.Or(opts.ProcRoot, procfs.DefaultMountPoint)
	fsys, err := procfs.NewFS(root)
	if err != nil {
		return nil, fmt.Errorf("open procfs: %w", err)
	}
	mounts, err := readMounts(root)
	if err != nil {
		return nil, err
	}
	// btime is read once: the kernel derives it from the current wall clock
	// minus uptime, so it can wobble by a second between reads, and process
	// start times computed from it would wobble with it.
	stat, err := fsys.Stat()
	if err != nil {
		return nil, fmt.Errorf("read boot time: %w", err)
	}
	return &Scanner{
		root:     root,
		fs:       fsys,
		mounts:   mounts.withSysRoot(opts.SysRoot),
		bootTime: time.Unix(int64(stat.BootTime), 0),
		self:     readSelf(root),
		pageSize: uint64(os.Getpagesize()),
		cache:    newScanCache(),
	}, nil
}

// Close releases what the scanner holds. The scanner must not be used after.
func (s *Scanner) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache = newScanCache()
	return nil
}

// Mounts says where the cgroup hierarchies are, with Options.SysRoot applied.
func (s *Scanner) Mounts() Mounts { return s.mounts }

// Invalidate forgets the cached static fields of one identity, so the next
// scan reads them again. Call it after migrating a process to another cgroup:
// the cache does not notice migrations (see scan_cache.go).
func (s *Scanner) Invalidate(id Identity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache.drop(id)
}

// Scan reads a snapshot of the host. Processes that vanish while being read
// are left out; a field that cannot be read (usually a permission error when
// not root) is left empty and marks its process Partial. Only a failure to
// list the processes at all is an error.
//
// The returned Snapshot is never modified afterwards, and its Processes are
// fresh each scan, but slices in them (Argv, NSpid) are shared between
// snapshots: callers must treat them as read-only.
func (s *Scanner) Scan() (*Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.reads = readCounts{}

	now := time.Now()
	found, kthreadd, err := s.readStats()
	if err != nil {
		return nil, err
	}
	if s.testHookAfterStat != nil {
		s.testHookAfterStat()
	}
	snap := &Snapshot{
		Time:       now,
		BootTime:   s.bootTime,
		ClockTicks: userHZ,
		PageSize:   s.pageSize,
		Hostname:   readHostname(s.root),
		Self:       s.self,
		Procs:      make([]*Process, 0, len(found)),
		ByPID:      make(map[int]*Process, len(found)),
		Mounts:     s.mounts,
	}
	for _, f := range found {
		id := Identity{PID: f.st.PID, Start: f.st.Starttime}
		kernel := isKernel(f.st, kthreadd)
		var sf static
		if e := s.cache.lookup(id, f.st.Comm, f.st.StartCode); e != nil {
			e.gen = s.gen
			sf = e.static
		} else {
			var gone bool
			if sf, gone = readStatic(f.p, f.st, kernel, s.mounts, &s.reads); gone {
				continue
			}
			s.cache.store(id, sf, s.gen)
		}
		p := newProcess(f.st, sf, kernel, s.pageSize)
		snap.Procs = append(snap.Procs, p)
		snap.ByPID[p.PID] = p
		if p.Partial {
			snap.PartlyUnreadable++
		}
	}
	s.cache.sweep(s.gen)
	snap.Cgroups, snap.Freezers = s.cgroupStates(snap.Procs)
	// The socket table is an extra; failing to read it must not cost the
	// whole snapshot, so an unreadable table shows as no listeners.
	if snap.Listeners, err = readListeners(s.root); err != nil {
		snap.Listeners = map[string]bool{}
	}
	return snap, nil
}

// statRead is one process as the stat pass found it.
type statRead struct {
	p  procfs.Proc
	st procfs.ProcStat
}

// readStats lists the pid directories and reads each one's stat: the only
// per-process read a steady refresh does. It returns them sorted by pid, and
// whether pid 2 is kthreadd (see isKthreadd).
func (s *Scanner) readStats() (found []statRead, kthreadd bool, err error) {
	list, err := s.fs.AllProcs()
	if err != nil {
		return nil, false, fmt.Errorf("list processes in %s: %w", s.root, err)
	}
	found = make([]statRead, 0, len(list))
	for _, p := range list {
		s.reads.stat++
		st, err := readStat(p)
		if err != nil {
			// Vanished since the readdir, or a stat we cannot parse: either
			// way there is no identity to report it under.
			continue
		}
		kthreadd = kthreadd || isKthreadd(st)
		found = append(found, statRead{p, st})
	}
	slices.SortFunc(found, func(a, b statRead) int { return cmp.Compare(a.st.PID, b.st.PID) })
	return found, kthreadd, nil
}

// cgroupStates reads the state of every v2 cgroup and v1 freezer cgroup that
// some process is in, each once.
func (s *Scanner) cgroupStates(procs []*Process) (v2, freezers map[string]CgroupState) {
	v2, freezers = map[string]CgroupState{}, map[string]CgroupState{}
	for _, p := range procs {
		if _, ok := v2[p.Cgroup]; p.Cgroup != "" && !ok {
			v2[p.Cgroup] = s.cgroupState(s.mounts.V2Dir(p.Cgroup), false)
		}
		if _, ok := freezers[p.Freezer]; p.Freezer != "" && !ok {
			freezers[p.Freezer] = s.cgroupState(s.mounts.FreezerDir(p.Freezer), true)
		}
	}
	return v2, freezers
}

// cgroupState reads one cgroup's state for a snapshot. A read error other
// than a missing directory (which ReadCgroupState already reports as
// !Exists) is not worth failing the scan for; the cgroup then shows as
// unknown, i.e. the zero state.
func (s *Scanner) cgroupState(dir string, v1Freezer bool) CgroupState {
	st, err := ReadCgroupState(dir, v1Freezer)
	if err != nil {
		return CgroupState{}
	}
	return st
}

// readSelf returns the pid <procRoot>/self points to, as that procfs numbers
// it (which differs from os.Getpid inside another pid namespace), or 0.
func readSelf(procRoot string) int {
	target, err := os.Readlink(filepath.Join(procRoot, "self"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(filepath.Base(target))
	if err != nil {
		return 0
	}
	return pid
}

// readHostname reads <procRoot>/sys/kernel/hostname, the UTS name of the
// reader's namespace, falling back to os.Hostname when the file is absent.
func readHostname(procRoot string) string {
	data, err := os.ReadFile(filepath.Join(procRoot, "sys", "kernel", "hostname"))
	if err == nil {
		return strings.TrimSpace(string(data))
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	name, err := os.Hostname()
	if err != nil {
		return ""
	}
	return name
}
