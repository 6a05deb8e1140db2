package proc

import (
	"bytes"
	"path/filepath"
	"slices"
)

// A steady refresh reads every live process's stat, and at 10,000
// processes that alone costs more CPU than the whole refresh may (about
// 5 µs of kernel time each, do_task_stat). But almost nothing in stat
// changes unless the process runs: utime and stime, the state (a process
// stops, freezes or exits in its own context, by handling the signal or
// running do_exit), the thread count, comm, an exec. The exceptions are
// the parent, which changes when the parent dies (reparenting), and the
// memory counters, which reclaim can lower behind an idle process's back.
//
// A cgroup v2 directory's cpu.stat (a core file, present whether or not
// the cpu controller is enabled) adds up the CPU time of every task in it
// and below: when usage_usec did not move between two refreshes, no task
// in that cgroup ran in between. So a scan reads one cpu.stat per cgroup
// and, for the processes of a cgroup that did not run, reuses the stat it
// read before (pidTable.scan), with four guards:
//
//   - the cgroup's usage is compared between the starts of two scans,
//     and a stat is reused only if it was read after the first of them:
//     a cgroup seen for the first time is not quiet until its second scan;
//   - the process must still be in that cgroup: the scanner caches a
//     process's cgroup (scan_cache.go), and a process moved out of a quiet
//     cgroup runs elsewhere. Runtimes move what they start right away, so
//     the cache reads a process's cgroup again on its second scan
//     (Scanner.readStatics); a later move is found by reading a quiet
//     cgroup's cgroup.procs, each cgroup one scan in reuseRounds (the
//     read costs the kernel more than the process stats it saves, read
//     every time), and a process missing from it is read afresh, its
//     cgroup with it;
//   - a reused stat stands only while its parent (pid and start time) is
//     still there, else it is read (see pidTable.checkParents);
//   - each process is read anyway one scan in reuseRounds (a different
//     eighth of them each scan), so memory counters and anything
//     unforeseen lag at most that many refreshes; but not while a front
//     end settles its cgroup (ScanHints: nothing of its processes is
//     shown), and then at the first scan that does not.
//
// Zombies and kernel threads are always read, as are processes in the
// root cgroup (whose usage is the whole machine's) and any process whose
// cgroup is unknown. Activity shows up by the next refresh at the latest:
// the scheduler charges a cgroup at every tick and context switch, so a
// task that ran since the last start has been charged by the next one,
// bar the last few microseconds of a task still on a CPU at the read. On
// hosts without cgroup2, or with cgroupfs not mounted, nothing is reused.
// A process in a threaded cgroup whose other threads live elsewhere shows
// their CPU time late (by reuseRounds at most).

// reuseRounds bounds how many scans in a row may reuse a process's stat.
const reuseRounds = 8

// cgroupCPU holds descriptors on the cpu.stat and cgroup.procs of every v2
// cgroup the last scan found processes in, and the usage read at each
// scan's start.
type cgroupCPU struct {
	dirOf func(string) string
	fds   *fdBudget
	files map[string]*cpuFile
	// quiet is the answer of the last start: the cgroups that did not run
	// since the start of the scan before.
	quiet map[string]*cpuFile
	buf   []byte
	gen   uint64
	// parents are the ancestors read first (cgroup_cpu_parents.go), in
	// order shallow first; dirty says the cgroups followed changed since
	// they were picked. usageReads counts cpu.stat reads at starts.
	parents    map[string]*parentFile
	order      []*parentFile
	dirty      bool
	usageReads int
}

type cpuFile struct {
	// fd is on cpu.stat, procs on cgroup.procs; both -1 when not held.
	fd, procs int
	usage     uint64
	// members is this scan's reading of cgroup.procs, sorted, when checked
	// says it was read (see cgroupCPU.start); round spreads those reads.
	members []int
	checked bool
	round   uint
	// atStart is set when usage was read at a scan's start, so that the
	// next start can compare with it (see cgroupCPU.start).
	atStart bool
	gen     uint64
	// parents are the parents followed above it (see regroup).
	parents []*parentFile
	// settled is this scan's hint (ScanHints.Settled).
	settled bool
}

func newCgroupCPU(dirOf func(string) string, fds *fdBudget) *cgroupCPU {
	return &cgroupCPU{dirOf: dirOf, fds: fds, files: map[string]*cpuFile{}, quiet: map[string]*cpuFile{}, buf: make([]byte, 4096)}
}

// start reads the usage of every cgroup held and returns those whose usage
// equals what the previous start read; of one in reuseRounds of them, it
// reads the members too (cpuFile.checked). The map is reused by the next
// call.
func (c *cgroupCPU) start() map[string]*cpuFile {
	clear(c.quiet)
	c.startParents()
	for path, f := range c.files {
		if f.fd < 0 {
			continue
		}
		u := f.usage
		if !f.atStart || !underQuiet(f.parents) {
			var ok bool
			u, ok = c.usage(f.fd)
			c.usageReads++
			if !ok {
				c.drop(path, f)
				continue
			}
		}
		if f.atStart && u == f.usage {
			f.round++
			f.checked = f.round%reuseRounds == 0
			if !f.checked || c.readMembers(f) {
				c.quiet[path] = f
			}
		}
		f.usage, f.atStart = u, true
	}
	return c.quiet
}

// settle marks the cgroups of this scan's hint, and only those, settled:
// a lookup per cgroup followed rather than per process.
func (c *cgroupCPU) settle(settled map[string]bool) {
	for p, f := range c.files {
		f.settled = settled[p]
	}
}

// readMembers reads the cgroup's cgroup.procs into f.members, sorted, and
// reports whether it could (a list longer than the buffer counts as not).
func (c *cgroupCPU) readMembers(f *cpuFile) bool {
	n, err := preadOnce(f.procs, c.buf)
	if err != nil || n >= len(c.buf) {
		return false
	}
	members, err := appendCgroupProcs(f.members[:0], c.buf[:n])
	if err != nil {
		return false
	}
	f.members = members
	return true
}

// begin starts the registration of this scan's cgroups.
func (c *cgroupCPU) begin() { c.gen++ }

// add registers a cgroup some process of this scan is in: a new one is
// opened, and its first usage (read after the stats) is no baseline.
func (c *cgroupCPU) add(path string) {
	if path == "" || path == "/" {
		return
	}
	if f := c.files[path]; f != nil {
		f.gen = c.gen
		return
	}
	dir := c.dirOf(path)
	if dir == "" || c.fds.limit.Load() == 0 || !c.fds.take() {
		return
	}
	if !c.fds.take() {
		c.fds.held.Add(-1)
		return
	}
	f := &cpuFile{fd: -1, procs: -1, gen: c.gen, round: uint(len(c.files))}
	c.files[path] = f // when not held, remembered so the next scans do not try again
	c.dirty = true
	fd, err := openCgroup2(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		c.fds.held.Add(-2)
		return
	}
	procs, err := openCgroup2(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		closeFD(fd)
		c.fds.held.Add(-2)
		return
	}
	f.fd, f.procs = fd, procs
}

// openCgroup2 opens a file for reading, and only if it is on cgroup2.
func openCgroup2(path string) (int, error) { return openOnCgroupfs(path, false) }

// end closes the descriptors of cgroups no process is in any more.
func (c *cgroupCPU) end() {
	for path, f := range c.files {
		if f.gen != c.gen {
			c.drop(path, f)
		}
	}
	if c.dirty {
		c.regroup()
	}
}

// usage reads usage_usec, the first line of cpu.stat.
func (c *cgroupCPU) usage(fd int) (uint64, bool) {
	n, err := preadOnce(fd, c.buf)
	if err != nil || n >= len(c.buf) {
		return 0, false
	}
	line, _, _ := bytes.Cut(c.buf[:n], []byte("\n"))
	v, ok := bytes.CutPrefix(line, []byte("usage_usec "))
	if !ok {
		return 0, false
	}
	return parseUint(v)
}

func (c *cgroupCPU) drop(path string, f *cpuFile) {
	if f.fd >= 0 {
		closeFD(f.fd)
		closeFD(f.procs)
		c.fds.held.Add(-2)
	}
	delete(c.files, path)
	c.dirty = true
}

func (c *cgroupCPU) close() {
	for path, f := range c.files {
		c.drop(path, f)
	}
	c.closeParents()
}

// holds reports whether pid may be taken to be in the cgroup: it is in
// cgroup.procs when this scan read it, and is believed to be otherwise.
func (f *cpuFile) holds(pid int) bool {
	if !f.checked {
		return true
	}
	_, in := slices.BinarySearch(f.members, pid)
	return in
}

// stateStill reports whether the state (frozen, populated) of the v2
// cgroup path is the one the last scan read: no task of it ran since
// that scan's start, and this is not the scan in reuseRounds that reads
// it anyway. A cgroup freezes or thaws only by its tasks running into or
// out of the freezer, which charges the cgroup, as a stop or an exit
// charges it for a process's state (see above); populated changes only
// when its last process leaves, and the scan asks only about cgroups it
// found processes in.
func (c *cgroupCPU) stateStill(path string) bool {
	f, ok := c.quiet[path]
	return ok && f.round%reuseRounds != reuseRounds/2
}

// CgroupQuiet returns the number of the last scan (scans count from 1)
// and whether no task of the v2 cgroup path ran between its start and
// the start of the scan before it.
func (s *Scanner) CgroupQuiet(path string) (scan uint64, quiet bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, quiet = s.cpu.quiet[path]
	return s.gen, quiet
}

// CgroupUsage returns the usage_usec of the v2 cgroup path as the last
// scan read it at its start, if that scan read it: the CPU time of every
// task in it, for whoever would read cpu.stat again right after.
func (s *Scanner) CgroupUsage(path string) (usec uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.cpu.files[path]
	if f == nil || !f.atStart || f.gen != s.cpu.gen {
		return 0, false
	}
	return f.usage, true
}
