package proc

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	// Need makes the scan lazy. Every scan reads each new process's stat,
	// cmdline and cgroup; with Need set, it then reads only the fields Need
	// asks for (exe, cwd, status) and marks the rest in Process.Unread.
	// Need is called again after each read, with the fields read so far
	// filled in, until it asks for nothing more (a rule with exe and cwd
	// matchers needs the cwd only once the exe matched). It must depend on
	// nothing but the static fields (comm, argv, exe, cwd, cgroup,
	// freezer): its answer is cached with them, per identity. It runs on
	// the scan's reading goroutines, must be safe for concurrent use, and
	// must not keep p. model.Rules.Needs is the one sandtop uses: it asks
	// for what some rule's matchers could still depend on.
	//
	// A nil Need reads every field of every process: a full read. Use it
	// for anything that will be matched against rules not known now (a
	// recording replayed with other rules) or that shows every field of
	// every process.
	Need func(p *Process) Fields
	// OneShot is for a scanner that scans once, or a few times in a
	// command that then exits (list, kill): it holds no descriptors
	// between scans. A refresh loop saves a path walk per process by
	// holding each stat file open (see pid_table.go), but a short-lived
	// process pays for those descriptors in growing its descriptor table:
	// every doubling of a multi-threaded process's table waits for an RCU
	// grace period (expand_fdtable, fs/file.c), and a cold scan of 3,000
	// processes spent some 45 ms of its 70 ms stat pass waiting in six of
	// them, off CPU, then about 5 ms closing the descriptors again.
	OneShot bool
}

// Scanner reads snapshots of the host. It caches the static fields of each
// process by identity (see scan_cache.go) and keeps a descriptor open on
// every live process's stat file and every cgroup's state file (see
// pid_table.go and cgroup_files.go; none with Options.OneShot), so keep
// one scanner per refresh loop, and Close it. Its methods may be called
// from several goroutines; scans are serialised, and a scan reads with up
// to one goroutine per core (at most four).
type Scanner struct {
	root     string
	mounts   Mounts
	bootTime time.Time
	self     int
	pageSize uint64
	need     func(*Process) Fields
	oneShot  bool

	mu    sync.Mutex
	gen   uint64
	cache scanCache
	// fds is the budget of descriptors held open between scans.
	fds *fdBudget
	// pids follows the live pids and holds their stat descriptors;
	// cgroups and freezers hold the cgroup state files.
	pids              pidTable
	cgroups, freezers *cgroupFiles
	// cpu follows the CPU usage of the cgroups processes are in, so that a
	// refresh can reuse the stat of processes that did not run; moved
	// collects the processes a scan found out of their cached cgroup.
	cpu   *cgroupCPU
	moved []Identity
	// found is the stat pass's output, reused between scans.
	found []statRead
	// todo lists the indexes in found whose static fields must be read.
	todo []int
	// readers hold the buffers of the static-field workers; workers, when
	// not zero, fixes how many goroutines read (benchmarks compare one
	// with the default).
	readers []*staticReader
	workers int
	// strings interns the static strings of new processes.
	strings interner
	// listeners, hostBuf and hostname keep what the last scan read, so an
	// unchanged socket table or hostname costs no allocation.
	listeners listenerCache
	hostPath  string
	hostBuf   []byte
	// hostFileBuf is reused by the reads of the host's meters.
	hostFileBuf []byte
	hostname    string
	// reads counts the files the last Scan read, by kind.
	reads readCounts
	// testHookAfterStat, when set, runs between reading every stat and reading
	// the static fields. It is a seam kept on purpose: a process that exits
	// or whose pid is reused in exactly that window is the race the scan's
	// vanished-process handling exists for, and no outside timing hits it
	// reliably. Nothing but proc's own tests can set it (it is unexported).
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
	s := &Scanner{
		root:     root,
		mounts:   mounts.withSysRoot(opts.SysRoot),
		bootTime: time.Unix(int64(stat.BootTime), 0),
		self:     readSelf(root),
		pageSize: uint64(os.Getpagesize()),
		need:     opts.Need,
		oneShot:  opts.OneShot,
		cache:    newScanCache(),
		hostPath: filepath.Join(root, "sys", "kernel", "hostname"),
		// /proc/stat is about 4 KiB on a 2-core machine, and grows with
		// the CPUs.
		hostFileBuf: make([]byte, 8192),
	}
	// A one-shot scan holds nothing: its budget is none.
	s.fds = &fdBudget{}
	if !opts.OneShot {
		s.fds = scannerFDs()
	}
	s.pids = newPIDTable(root, s.fds)
	s.cgroups = newCgroupFiles(false, s.mounts.V2Dir, s.fds)
	s.freezers = newCgroupFiles(true, s.mounts.FreezerDir, s.fds)
	s.cpu = newCgroupCPU(s.mounts.V2Dir, s.fds)
	s.cgroups.still = s.cpu.stateStill
	return s, nil
}

// Close releases what the scanner holds: the cache and every descriptor it
// keeps open. The scanner must not be used after.
func (s *Scanner) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache = newScanCache()
	s.pids.close()
	s.cgroups.close()
	s.freezers.close()
	s.cpu.close()
	s.found = nil
	return nil
}

// Mounts says where the cgroup hierarchies are, with Options.SysRoot applied.
func (s *Scanner) Mounts() Mounts { return s.mounts }

// ProcRoot returns where the scanned procfs is mounted.
func (s *Scanner) ProcRoot() string { return s.root }

// Seed fills the static-field cache from the processes of snap, an earlier
// snapshot of the same /proc (same Options), so that the next Scan reads
// only stat for the identities in it, as a refresh does. Teardown seeds
// its verify scanner from the plan's snapshot: its rescan then costs a
// refresh, not a cold scan of the whole host (at 10,000 processes about a
// tenth). A seeded entry knows no startcode, which a Process does not
// carry, so for those identities an exec is noticed by comm alone (see
// scan_cache.go). A process snap left fields of unread (a lazy scan) has
// them read on its first scan here when this scanner's Need (or a full
// read) asks for them.
func (s *Scanner) Seed(snap *Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range snap.Procs {
		id := p.ID()
		if _, ok := s.cache.entries[id]; ok {
			continue
		}
		// p is immutable, so the entry may hold it as it is; a scan that
		// reads more of it (readSeeded) or a stat that moved makes a copy.
		s.cache.store(id, &cacheEntry{
			proc: p, gen: s.gen, seeded: p.Unread != 0,
			argvLate: p.Argv == nil && !p.Kernel && !p.Zombie(),
		})
	}
}

// Scan reads a snapshot of the host. Processes that vanish while being read
// are left out; a field that cannot be read (usually a permission error when
// not root) is left empty and marks its process Partial. Only a failure to
// list the processes at all is an error.
//
// The returned Snapshot is never modified afterwards, and neither is any
// Process in it. A Process whose fields did not change since the previous
// scan is the same *Process as in that scan's snapshot; a changed one is
// fresh. Slices in them (Argv, NSpid) are shared between snapshots, and so
// are the Cgroups, Freezers and Listeners maps while their contents do not
// change: callers must treat all of it as read-only.
func (s *Scanner) Scan() (*Snapshot, error) { return s.ScanWith(ScanHints{}) }

// ScanHints is what a front end tells a scan about what it shows.
type ScanHints struct {
	// Settled names v2 cgroups none of whose processes' own figures are
	// shown (a sandbox's dedicated cgroup, off screen and collapsed):
	// while such a cgroup does not run, its processes' stats are reused
	// without the read one scan in reuseRounds that bounds how stale
	// their memory counters may get, and read at the first scan that no
	// longer settles them. Their state, CPU time, threads and parent are
	// still those of now: they change only when the process runs, which
	// the cgroup's usage shows, or, for the parent, are checked anyway.
	Settled map[string]bool
	// Aside names processes none of whose own figures are shown that are
	// in no settled cgroup (a collapsed, off-screen container's shim):
	// while one sleeps, its stat is carried from the scan before but one
	// scan in reuseRounds, and its exit is watched (see pid_aside.go). The
	// snapshot names the pids it carried (Snapshot.Carried).
	Aside map[Identity]bool
}

// ScanWith is Scan with hints. Only the scan they are given to is
// hinted: a scan that must see everything as it is (a teardown's
// verification) calls Scan.
func (s *Scanner) ScanWith(h ScanHints) (*Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.reads = readCounts{}

	now := time.Now()
	kthreadd, err := s.readStats(h)
	if err != nil {
		return nil, err
	}
	if s.testHookAfterStat != nil {
		s.testHookAfterStat()
	}
	s.readStatics(kthreadd)
	s.pids.remember(s.found)
	live := 0
	for i := range s.found {
		if !s.found[i].gone {
			live++
		}
	}
	snap := &Snapshot{
		Time:       now,
		BootTime:   s.bootTime,
		ClockTicks: userHZ,
		PageSize:   s.pageSize,
		Hostname:   s.readHostname(),
		Self:       s.self,
		Procs:      make([]*Process, 0, live),
		Mounts:     s.mounts,
		Settled:    h.Settled,
		Carried:    slices.Clone(s.pids.carried),
	}
	// Three small files, read with every scan so the screen never reads.
	snap.Host, _ = ReadHost(func(name string) ([]byte, error) {
		return readFileInto(filepath.Join(s.root, name), &s.hostFileBuf, 1<<20, false)
	})
	// An identity whose stat shows nothing new since the last scan gets the
	// same *Process as then: snapshots are immutable, so sharing an unchanged
	// Process is safe, and on a host of mostly idle processes a refresh then
	// allocates almost nothing per process. A changed process gets a fresh
	// one of its own (not a slab: a long-lived idle process would pin its
	// whole slab).
	for i := range s.found {
		f := &s.found[i]
		if f.gone {
			continue
		}
		e := f.entry
		p := e.proc
		if kernel := f.st.kernel(kthreadd); !sameStat(p, &f.st, kernel, s.pageSize) {
			np := *p
			setStat(&np, &f.st, kernel, s.pageSize)
			p, e.proc = &np, &np
		}
		snap.Procs = append(snap.Procs, p)
		if p.Partial {
			snap.PartlyUnreadable++
		}
	}
	// Every live process's entry is in the cache, marked with this
	// generation, each identity once: entries beyond those are the exited.
	if s.cache.len() > live {
		s.cache.sweep(s.gen)
	}
	snap.Cgroups, snap.Freezers = s.cgroupStates(snap.Procs)
	// The socket table is an extra; failing to read it must not cost the
	// whole snapshot.
	if snap.Listeners, err = s.listeners.read(s.root, 0); err != nil {
		// nil, not empty: "cannot tell" must not read as "nothing listens",
		// which would mark every socket-supervised sandbox an orphan.
		snap.Listeners = nil
	}
	return snap, nil
}

// readStats lists the pid directories and reads each one's stat: the only
// per-process read a steady refresh does. It fills s.found, sorted by pid,
// and reports whether pid 2 is kthreadd (see isKthreadd).
func (s *Scanner) readStats(h ScanHints) (kthreadd bool, err error) {
	// A process whose stat may be reused: its cgroup did not run, and it
	// is still in it (see cgroup_cpu.go). One that left has its cached
	// cgroup dropped with the rest of its entry, to be read again. The
	// pids in cgroup.procs are those of sandtop's own pid namespace, so
	// only a /proc of that namespace can be compared with them.
	var quiet func(Identity, *cacheEntry, *pidStat) reuse
	s.moved = s.moved[:0]
	q := s.cpu.start()
	s.cpu.settle(h.Settled)
	if (len(q) > 0 || len(h.Aside) > 0) && s.pids.births.path != "" {
		// A container's processes sit next to each other by pid: the
		// cgroup the process before was in is looked up again without
		// hashing its path. quiet is asked from one goroutine.
		var lastCgroup string
		lastF, lastOK := q[lastCgroup]
		quiet = func(id Identity, hint *cacheEntry, last *pidStat) reuse {
			e := s.cache.entry(id, hint)
			if e == nil || e.proc.Zombie() {
				return reuseNone
			}
			if e.proc.Cgroup != lastCgroup {
				lastCgroup = e.proc.Cgroup
				lastF, lastOK = q[lastCgroup]
			}
			f, ok := lastF, lastOK
			if !ok {
				if h.Aside[id] && e.proc.State == 'S' {
					*last = statOf(e.proc, e.startCode, s.pageSize)
					return reuseAside
				}
				return reuseNone
			}
			if !f.holds(id.PID) {
				s.moved = append(s.moved, id)
				return reuseNone
			}
			*last = statOf(e.proc, e.startCode, s.pageSize)
			if f.settled {
				return reuseSettled
			}
			return reuseQuiet
		}
	}
	s.found, err = s.pids.scan(s.found[:0], &s.reads, s.readWorkers(), quiet)
	if err != nil {
		return false, fmt.Errorf("list processes in %s: %w", s.root, err)
	}
	for _, id := range s.moved {
		s.cache.drop(id)
	}
	for i := range s.found {
		if f := &s.found[i]; !f.gone && f.st.pid == 2 {
			kthreadd = isKthreadd(procfs.ProcStat{PID: 2, Flags: f.st.flags, Comm: f.st.comm})
		}
	}
	return kthreadd, nil
}

// cgroupStates reads the state of every v2 cgroup and v1 freezer cgroup that
// some process is in, each once.
func (s *Scanner) cgroupStates(procs []*Process) (v2, freezers map[string]CgroupState) {
	s.cgroups.begin()
	s.freezers.begin()
	s.cpu.begin()
	// A container's processes sit next to each other by pid: a cgroup
	// the process before was in adds nothing (map lookups and path hashes
	// fewer for most of a fleet's processes). "" adds nothing anyway.
	var lastCgroup, lastFreezer, lastFollowed string
	for _, p := range procs {
		if p.Cgroup != lastCgroup {
			s.cgroups.add(p.Cgroup)
			lastCgroup = p.Cgroup
		}
		if p.Freezer != lastFreezer {
			s.freezers.add(p.Freezer)
			lastFreezer = p.Freezer
		}
		// A one-shot scanner holds no cpu.stat to compare with the next
		// scan: following its cgroups would cost a path per process.
		if !p.Kernel && !s.oneShot && p.Cgroup != lastFollowed {
			s.cpu.add(p.Cgroup)
			lastFollowed = p.Cgroup
		}
	}
	s.cpu.end()
	return s.cgroups.end(), s.freezers.end()
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
// An unchanged name is handed out again rather than allocated anew.
func (s *Scanner) readHostname() string {
	if s.hostBuf == nil {
		s.hostBuf = make([]byte, 256) // HOST_NAME_MAX is 64
	}
	data, err := readFileInto(s.hostPath, &s.hostBuf, 4096, true)
	switch {
	case err == nil:
		if name := bytes.TrimSpace(data); string(name) != s.hostname {
			s.hostname = string(name)
		}
		return s.hostname
	case !errors.Is(err, fs.ErrNotExist):
		return ""
	}
	name, err := os.Hostname()
	if err != nil {
		return ""
	}
	return name
}
