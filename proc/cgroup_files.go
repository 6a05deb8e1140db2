package proc

import (
	"errors"
	"maps"
	"path/filepath"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Every refresh reports the state (populated, frozen) of every cgroup some
// process is in: a thousand sandboxes mean a thousand cgroup.events and as
// many v1 freezer.state files. Read with os.ReadFile that measured 20-75 ms
// a refresh at 10,000 processes, up to half the floor. Like the stat files,
// these are seq_files that regenerate when read at offset 0, so the scanner
// keeps a descriptor open on each and preads it: about 4 ms a refresh.
//
// A held descriptor of a removed cgroup fails with ENODEV (kernfs deactivates
// the node), and a cgroup created again under the same name is a new node,
// so a failed read closes the descriptor and the directory is looked up
// afresh. Descriptors are held only on cgroupfs (statfs magic), so fixture
// trees are re-read every time.

// Filesystem magics from include/uapi/linux/magic.h.
const (
	cgroup2SuperMagic = 0x63677270
	cgroupSuperMagic  = 0x27e0eb
)

// cgroupStateBufSize holds cgroup.events ("populated 1\nfrozen 0\n") or
// freezer.state ("FREEZING\n") with room for keys added by later kernels.
const cgroupStateBufSize = 512

// fdBudget is how many descriptors scanners may hold, shared by their stat
// and cgroup files. Both counts are atomic: the stat reads run on several
// goroutines, and the scanners sharing a budget (processFDs) on others.
type fdBudget struct {
	limit, held atomic.Int64
}

// take reserves one descriptor, if the budget has room.
func (b *fdBudget) take() bool {
	if b.held.Add(1) > b.limit.Load() {
		b.held.Add(-1)
		return false
	}
	return true
}

// close closes the held descriptor *fd, if any (-1: none), and gives it
// back to the budget.
func (b *fdBudget) close(fd *int) {
	if *fd < 0 {
		return
	}
	closeFD(*fd)
	*fd = -1
	b.held.Add(-1)
}

// cgroupFiles holds the state-file descriptors of the cgroups of one kind
// (v2 or v1 freezer) and the state map of the last snapshot.
type cgroupFiles struct {
	v1Freezer bool
	// dirOf maps a cgroup path (as in Process.Cgroup) to its directory.
	dirOf func(string) string
	fds   *fdBudget
	files map[string]*cgroupFile
	// scratch collects this scan's states; last is the map the previous
	// snapshot was given, handed out again while nothing changes.
	scratch, last map[string]CgroupState
	buf           []byte
	gen           uint64
	// still, when not nil, says whether a cgroup's state cannot have
	// changed since the last scan read it (see cgroupCPU.stateStill).
	still func(path string) bool
}

type cgroupFile struct {
	fd  int // -1 when not held
	gen uint64
}

func newCgroupFiles(v1Freezer bool, dirOf func(string) string, fds *fdBudget) *cgroupFiles {
	return &cgroupFiles{
		v1Freezer: v1Freezer,
		dirOf:     dirOf,
		fds:       fds,
		files:     map[string]*cgroupFile{},
		scratch:   map[string]CgroupState{},
		buf:       make([]byte, cgroupStateBufSize),
	}
}

// begin starts a scan.
func (c *cgroupFiles) begin() {
	c.gen++
	clear(c.scratch)
}

// add records the state of the cgroup at path, reading it once per scan.
func (c *cgroupFiles) add(path string) {
	if path == "" {
		return
	}
	if _, ok := c.scratch[path]; ok {
		return
	}
	if c.still != nil && c.still(path) {
		if st, ok := c.last[path]; ok {
			if f := c.files[path]; f != nil {
				f.gen = c.gen
			}
			c.scratch[path] = st
			return
		}
	}
	c.scratch[path] = c.read(path)
}

// end closes the descriptors of cgroups no process is in any more, and
// returns the scan's state map: the previous snapshot's when it is equal,
// so an unchanged host costs no new map (snapshots are read-only).
func (c *cgroupFiles) end() map[string]CgroupState {
	for path, f := range c.files {
		if f.gen != c.gen {
			c.drop(path, f)
		}
	}
	if c.last == nil || !maps.Equal(c.last, c.scratch) {
		c.last = maps.Clone(c.scratch)
	}
	return c.last
}

// read returns one cgroup's state: from its held descriptor, or by opening
// its state file (and holding it when it is on cgroupfs and the budget
// allows), or through ReadCgroupState, which knows the root cgroup and
// removed ones.
func (c *cgroupFiles) read(path string) CgroupState {
	f := c.files[path]
	if f != nil {
		f.gen = c.gen
		if f.fd >= 0 {
			n, err := preadOnce(f.fd, c.buf)
			if err == nil && n < len(c.buf) {
				return c.parse(c.buf[:n])
			}
			// ENODEV: removed (and maybe made again); look it up afresh.
			c.drop(path, f)
			f = nil
		}
	}
	dir := c.dirOf(path)
	if f == nil {
		if st, ok := c.open(path, dir); ok {
			return st
		}
	}
	if f == nil {
		// Remember the path even when nothing is held, so the next scan
		// does not try to open it again.
		c.files[path] = &cgroupFile{fd: -1, gen: c.gen}
	}
	st, err := ReadCgroupState(dir, c.v1Freezer)
	if err != nil {
		// A read error other than a missing directory (which
		// ReadCgroupState reports as !Exists) is not worth failing the
		// scan for: the cgroup shows as unknown, the zero state.
		return CgroupState{}
	}
	return st
}

// open opens the state file of dir and holds it when it is on cgroupfs
// and the budget allows; a file it may not hold is read all the same. It
// reports false when the caller must fall back to ReadCgroupState.
func (c *cgroupFiles) open(path, dir string) (CgroupState, bool) {
	if dir == "" {
		return CgroupState{}, false
	}
	name := "cgroup.events"
	if c.v1Freezer {
		name = "freezer.state"
	}
	fd, err := openOnCgroupfs(filepath.Join(dir, name), true)
	if err != nil {
		return CgroupState{}, false
	}
	n, err := preadOnce(fd, c.buf)
	if err != nil || n >= len(c.buf) {
		closeFD(fd)
		return CgroupState{}, false
	}
	if !c.fds.take() {
		// Out of budget (a one-shot scanner holds none): what was read
		// stands, and reading it again through ReadCgroupState, as this
		// did, cost a second open of every cgroup's file.
		closeFD(fd)
		c.files[path] = &cgroupFile{fd: -1, gen: c.gen}
		return c.parse(c.buf[:n]), true
	}
	c.files[path] = &cgroupFile{fd: fd, gen: c.gen}
	return c.parse(c.buf[:n]), true
}

// openOnCgroupfs opens a file for reading, and only if it is on cgroup2
// (or on a v1 hierarchy too, with v1): a descriptor the scanner holds must
// be one whose reads show the cgroup's state now, which a fixture tree's
// plain files would not.
func openOnCgroupfs(path string, v1 bool) (int, error) {
	fd, err := openRead(path)
	if err != nil {
		return -1, err
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil || sfs.Type != cgroup2SuperMagic && (!v1 || sfs.Type != cgroupSuperMagic) {
		closeFD(fd)
		return -1, errNotCgroupfs
	}
	return fd, nil
}

var errNotCgroupfs = errors.New("not on cgroupfs")

func (c *cgroupFiles) parse(b []byte) CgroupState {
	if c.v1Freezer {
		return parseFreezerState(b)
	}
	return parseCgroupEvents(b)
}

func (c *cgroupFiles) drop(path string, f *cgroupFile) {
	if f.fd >= 0 {
		closeFD(f.fd)
		c.fds.held.Add(-1)
	}
	delete(c.files, path)
}

// close releases every held descriptor.
func (c *cgroupFiles) close() {
	for path, f := range c.files {
		c.drop(path, f)
	}
	c.last = nil
}
