package proc

import (
	"cmp"
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"
)

// ResourceReader reads, for the cgroups and processes a view of the host
// names, what a scan does not: the resource files of sandbox cgroups, the
// wait channel of processes in uninterruptible sleep, and the kernel log's
// OOM kills. A scan knows no sandboxes, so it cannot tell the few cgroups
// worth these dozen files each from the hundreds of services' it sees.
// Keep one per refresh loop (it follows the kernel log from where it left
// off) and Close it.
type ResourceReader struct {
	procRoot string
	mounts   Mounts
	buf      []byte
	kmsg     *kmsgReader
	// boot is the boot time of the scanner the reader was made for (see
	// ReadLogAhead); zero otherwise.
	boot time.Time
	// fds is the budget the held descriptors come out of (a scanner's);
	// with none left, or none given, a file is opened, read and closed.
	fds *fdBudget
	// usage, when set, is the cpu.stat usage the scanner read at the
	// start of its last scan (see Scanner.CgroupUsage), and quiet what it
	// knows of which cgroups ran (Scanner.CgroupQuiet).
	usage func(v2 string) (uint64, bool)
	quiet func(v2 string) (uint64, bool)
	// reads counts the files read, and parentReads the parents'
	// cgroup.subtree_control read, for tests.
	reads, parentReads int
	// held is the descriptors of the cgroups the last Read read; parents
	// those of their parents it needed, by directory
	// (resource_controllers.go).
	held    map[CgroupKey]*heldCgroup
	parents map[string]*heldParent
	gen     uint64
	// res is where cgroup gathers one cgroup's figures: the parsers are
	// reached through function values, so a local would be moved to the
	// heap for every cgroup read, changed or not.
	res CgroupResources
}

// NewResourceReader reads under procRoot ("" for /proc) and the cgroup
// mounts m (a Scanner's Mounts). The kernel log is the running kernel's,
// so it is read only for the host's own procfs, never a fixture tree.
func NewResourceReader(procRoot string, m Mounts) *ResourceReader {
	procRoot = cmp.Or(procRoot, "/proc")
	kmsg := ""
	if procRoot == "/proc" {
		kmsg = "/dev/kmsg"
	}
	return &ResourceReader{procRoot: procRoot, mounts: m, buf: make([]byte, 4096), kmsg: newKmsgReader(kmsg),
		held: map[CgroupKey]*heldCgroup{}, parents: map[string]*heldParent{}}
}

// NewResourceReader reads the host s scans, holding the descriptors of
// the cgroup files it reads again and again out of s's budget (none for
// a one-shot scanner), and taking a v2 cgroup's CPU usage from what s
// read at the start of its last scan rather than reading cpu.stat again.
func (s *Scanner) NewResourceReader() *ResourceReader {
	r := NewResourceReader(s.root, s.mounts)
	r.fds, r.usage, r.quiet, r.boot = s.fds, s.CgroupUsage, s.CgroupQuiet, s.bootTime
	return r
}

// ReadLogAhead starts reading the kernel log now, on a goroutine of its
// own, for a reader made by Scanner.NewResourceReader: a command that
// scans once reads the log while the scan runs, since neither needs the
// other and the scan leaves a core idle much of the time. The next Read
// waits for it. A log of thousands of records is thousands of reads.
func (r *ResourceReader) ReadLogAhead() {
	if !r.boot.IsZero() {
		r.kmsg.readAhead(r.boot)
	}
}

// Close releases the kernel log and the held descriptors.
func (r *ResourceReader) Close() {
	r.kmsg.close()
	for k, h := range r.held {
		r.drop(k, h)
	}
	r.closeParents(true)
}

// CgroupWant is a cgroup to read and the figures wanted of it.
type CgroupWant struct {
	Key     CgroupKey
	Figures Figure
}

// AllFigures asks for every figure.
const AllFigures = HavePressureIO<<1 - 1

// Read fills snap's Resources for the cgroups of wants (only the figures
// each asks for; a file no figure wanted needs is not read), its Wchans
// for the processes of pids that are in state D, and its OOMKills with
// the kernel log's kills of the last hour. It replaces those fields, so a
// snapshot handed out already must not be given. The descriptors of
// cgroups and files not wanted this time are closed.
func (r *ResourceReader) Read(snap *Snapshot, wants []CgroupWant, pids []int) {
	r.gen++
	if len(wants) > 0 {
		snap.Resources = make(map[CgroupKey]*CgroupResources, len(wants))
		for _, w := range wants {
			if _, ok := snap.Resources[w.Key]; !ok && w.Figures != 0 {
				snap.Resources[w.Key] = r.cgroup(w.Key, w.Figures)
			}
		}
	}
	for k, h := range r.held {
		if h.gen != r.gen {
			r.drop(k, h)
		}
	}
	r.closeParents(false)
	for _, pid := range pids {
		p := snap.Proc(pid)
		if p == nil || p.State != 'D' {
			continue
		}
		if snap.Wchans == nil {
			snap.Wchans = map[int]string{}
		}
		snap.Wchans[pid] = r.wchan(pid)
	}
	snap.OOMKills = r.kmsg.kills(snap.BootTime, snap.Time.Add(-OOMWindow))
}

// OOMWindow is how far back the kernel log's OOM kills are reported.
const OOMWindow = time.Hour

// wchan reads /proc/PID/wchan: the kernel function a sleeping task waits
// in ("0" for a running one, and on kernels without CONFIG_KALLSYMS;
// proc(5)). "" when unknown.
func (r *ResourceReader) wchan(pid int) string {
	data, err := readFileInto(filepath.Join(r.procRoot, strconv.Itoa(pid), "wchan"), &r.buf, 4096, true)
	if err != nil {
		return ""
	}
	if s := string(data); s != "0" {
		return s
	}
	return ""
}

// cgroup reads the figures want of one cgroup: each from v2 where the
// host has it there, else from v1 (a hybrid host binds memory, pids, cpu
// and blkio to v1).
func (r *ResourceReader) cgroup(k CgroupKey, want Figure) *CgroupResources {
	h := r.held[k]
	if h == nil {
		h = r.newHeld(k)
		r.held[k] = h
	}
	h.gen = r.gen
	h.round++
	res := &r.res
	*res = CgroupResources{Asked: want}
	// The kernel recomputes a pressure file's averages every two seconds
	// (PSI_FREQ): read more often, it says the same.
	psiFresh := h.round%psiRounds == 0
	// An OOM kill is counted as its victim is chosen, and the victim then
	// runs to die: while the cgroup's tasks do not run, the count read
	// after the start of the scan before is the count now, bar a kill
	// whose victim has yet to run, which the next refresh shows. As for
	// stats (cgroup_cpu.go), it is read anyway one Read in reuseRounds.
	var scan uint64
	quiet := false
	if r.quiet != nil && k.V2 != "" && k.V2 != "/" {
		scan, quiet = r.quiet(k.V2)
	}
	reuseOOM := quiet && h.scan != 0 && h.scan+1 == scan && h.last.Has(HaveOOM) && h.round%reuseRounds != 0
	for _, f := range figureFiles {
		if want&f.fig == 0 || res.Has(f.fig) {
			continue
		}
		if f.fig == HaveOOM && reuseOOM {
			res.OOMKills, res.Have = h.last.OOMKills, res.Have|HaveOOM
			h.used |= 1<<v2MemoryEvents | 1<<v1OOMControl // keep whichever is held
			continue
		}
		if f.fig&pressureFigures != 0 && !psiFresh && h.last.Has(f.fig) {
			res.Have |= f.fig
			res.PressureCPU, res.PressureMemory, res.PressureIO = h.last.PressureCPU, h.last.PressureMemory, h.last.PressureIO
			h.used |= 1 << f.file
			continue
		}
		if f.fig == HaveCPU && r.usage != nil && k.V2 != "" && k.V2 != "/" {
			if u, ok := r.usage(k.V2); ok {
				res.CPUUsec, res.Have = u, res.Have|HaveCPU
				continue
			}
		}
		data := r.file(h, f.file)
		if data == nil {
			continue
		}
		if f.second != noFile {
			// v1's cpu.cfs_period_us goes with its quota. Both are read
			// into the one buffer: the quota is parsed first.
			q, okq := parseSingle(data)
			second := r.file(h, f.second)
			if second == nil {
				continue
			}
			p, okp := parseSingle(second)
			if okq && okp && p > 0 {
				res.CPULimitCores, res.Have = float64(q)/float64(p), res.Have|HaveCPULimit
			}
			continue
		}
		f.parse(data, res)
	}
	r.keepParent(h)
	h.closeUnused(r)
	h.scan = scan
	// An unchanged reading is handed out again, as the scan does with an
	// unchanged Process: snapshots never write what they hold, and a
	// quiet cgroup then costs no allocation.
	if h.last == nil || *h.last != *res {
		h.last = new(CgroupResources)
		*h.last = *res
	}
	return h.last
}

// pressureFigures are the figures of the pressure files; psiRounds is
// how many Reads in a row share one reading of them.
const (
	pressureFigures = HavePressureCPU | HavePressureMemory | HavePressureIO
	psiRounds       = 2
)

// resFile names one resource file a cgroup may have.
type resFile uint8

const (
	v2CPUStat resFile = iota
	v2MemoryCurrent
	v2MemoryPeak
	v2MemoryMax
	v2MemoryEvents
	v2CPUMax
	v2PIDsCurrent
	v2PIDsMax
	v2IOStat
	v2CPUPressure
	v2MemoryPressure
	v2IOPressure
	v1MemoryUsage
	v1MemoryMaxUsage
	v1MemoryLimit
	v1OOMControl
	v1CPUAcctUsage
	v1CFSQuota
	v1CFSPeriod
	v1PIDsCurrent
	v1PIDsMax
	v1Blkio
	nFiles
	noFile = nFiles
)

// resFiles' names, the v1 controller each is in ("" for v2), and the v2
// controller a v2 file is an interface file of (none for the core files,
// cpu.stat and the pressure files: see resource_controllers.go).
var fileNames = [nFiles]struct {
	name, v1 string
	ctl      controller
}{
	v2CPUStat: {"cpu.stat", "", 0}, v2MemoryCurrent: {"memory.current", "", ctlMemory}, v2MemoryPeak: {"memory.peak", "", ctlMemory},
	v2MemoryMax: {"memory.max", "", ctlMemory}, v2MemoryEvents: {"memory.events", "", ctlMemory}, v2CPUMax: {"cpu.max", "", ctlCPU},
	v2PIDsCurrent: {"pids.current", "", ctlPIDs}, v2PIDsMax: {"pids.max", "", ctlPIDs}, v2IOStat: {"io.stat", "", ctlIO},
	v2CPUPressure: {"cpu.pressure", "", 0}, v2MemoryPressure: {"memory.pressure", "", 0}, v2IOPressure: {"io.pressure", "", 0},
	v1MemoryUsage: {"memory.usage_in_bytes", "memory", 0}, v1MemoryMaxUsage: {"memory.max_usage_in_bytes", "memory", 0},
	v1MemoryLimit: {"memory.limit_in_bytes", "memory", 0}, v1OOMControl: {"memory.oom_control", "memory", 0},
	v1CPUAcctUsage: {"cpuacct.usage", "cpuacct", 0}, v1CFSQuota: {"cpu.cfs_quota_us", "cpu", 0}, v1CFSPeriod: {"cpu.cfs_period_us", "cpu", 0},
	v1PIDsCurrent: {"pids.current", "pids", 0}, v1PIDsMax: {"pids.max", "pids", 0},
	v1Blkio: {"blkio.throttle.io_service_bytes_recursive", "blkio", 0},
}

// figureFile is where one figure is read from: v2's file first, in the
// order of figureFiles, then v1's. A limit file that is present and says
// "unlimited" leaves the limit unset (whether the cgroup could have one
// is told by the controller's other figures: see HaveMemory).
type figureFile struct {
	fig    Figure
	file   resFile
	second resFile
	parse  func([]byte, *CgroupResources)
}

func setIf(res *CgroupResources, f Figure, to *uint64) func(uint64, bool) {
	return func(v uint64, ok bool) {
		if ok {
			*to, res.Have = v, res.Have|f
		}
	}
}

func single(f Figure, to func(*CgroupResources) *uint64) func([]byte, *CgroupResources) {
	return func(data []byte, res *CgroupResources) { setIf(res, f, to(res))(parseSingle(data)) }
}

func limit(f Figure, to func(*CgroupResources) *uint64) func([]byte, *CgroupResources) {
	return func(data []byte, res *CgroupResources) {
		if v, limited, ok := parseMax(data); ok && limited {
			*to(res), res.Have = v, res.Have|f
		}
	}
}

func pressure(f Figure, to func(*CgroupResources) *float64) func([]byte, *CgroupResources) {
	return func(data []byte, res *CgroupResources) {
		if v, ok := parsePressureSome(data); ok {
			*to(res), res.Have = v, res.Have|f
		}
	}
}

var (
	memoryBytes = func(r *CgroupResources) *uint64 { return &r.MemoryBytes }
	memoryPeak  = func(r *CgroupResources) *uint64 { return &r.MemoryPeak }
	memoryLimit = func(r *CgroupResources) *uint64 { return &r.MemoryLimit }
	pidsCurrent = func(r *CgroupResources) *uint64 { return &r.PIDs }
	pidsLimit   = func(r *CgroupResources) *uint64 { return &r.PIDsLimit }
	oomKills    = func(r *CgroupResources) *uint64 { return &r.OOMKills }
)

var figureFiles = []figureFile{
	{HaveCPU, v2CPUStat, noFile, func(d []byte, r *CgroupResources) {
		setIf(r, HaveCPU, &r.CPUUsec)(flatKey(d, "usage_usec"))
	}},
	{HaveCPU, v1CPUAcctUsage, noFile, func(d []byte, r *CgroupResources) {
		if ns, ok := parseSingle(d); ok {
			r.CPUUsec, r.Have = ns/1000, r.Have|HaveCPU
		}
	}},
	{HaveMemory, v2MemoryCurrent, noFile, single(HaveMemory, memoryBytes)},
	{HaveMemory, v1MemoryUsage, noFile, single(HaveMemory, memoryBytes)},
	{HaveMemoryPeak, v2MemoryPeak, noFile, single(HaveMemoryPeak, memoryPeak)},
	{HaveMemoryPeak, v1MemoryMaxUsage, noFile, single(HaveMemoryPeak, memoryPeak)},
	{HaveMemoryLimit, v2MemoryMax, noFile, limit(HaveMemoryLimit, memoryLimit)},
	{HaveMemoryLimit, v1MemoryLimit, noFile, func(d []byte, r *CgroupResources) {
		if v, ok := parseSingle(d); ok && v < v1Unlimited {
			r.MemoryLimit, r.Have = v, r.Have|HaveMemoryLimit
		}
	}},
	{HaveOOM, v2MemoryEvents, noFile, func(d []byte, r *CgroupResources) { setIf(r, HaveOOM, oomKills(r))(flatKey(d, "oom_kill")) }},
	{HaveOOM, v1OOMControl, noFile, func(d []byte, r *CgroupResources) { setIf(r, HaveOOM, oomKills(r))(flatKey(d, "oom_kill")) }},
	{HaveCPULimit, v2CPUMax, noFile, func(d []byte, r *CgroupResources) {
		if c, limited, ok := parseCPUMax(d); ok && limited {
			r.CPULimitCores, r.Have = c, r.Have|HaveCPULimit
		}
	}},
	// A quota of -1 is none; parseUint refuses it.
	{HaveCPULimit, v1CFSQuota, v1CFSPeriod, nil},
	{HavePIDs, v2PIDsCurrent, noFile, single(HavePIDs, pidsCurrent)},
	{HavePIDs, v1PIDsCurrent, noFile, single(HavePIDs, pidsCurrent)},
	{HavePIDsLimit, v2PIDsMax, noFile, limit(HavePIDsLimit, pidsLimit)},
	{HavePIDsLimit, v1PIDsMax, noFile, limit(HavePIDsLimit, pidsLimit)},
	{HaveIO, v2IOStat, noFile, func(d []byte, r *CgroupResources) {
		r.IORead, r.IOWrite = parseIOStat(d)
		r.Have |= HaveIO
	}},
	{HaveIO, v1Blkio, noFile, func(d []byte, r *CgroupResources) {
		r.IORead, r.IOWrite = parseBlkioBytes(d)
		r.Have |= HaveIO
	}},
	{HavePressureCPU, v2CPUPressure, noFile, pressure(HavePressureCPU, func(r *CgroupResources) *float64 { return &r.PressureCPU })},
	{HavePressureMemory, v2MemoryPressure, noFile, pressure(HavePressureMemory, func(r *CgroupResources) *float64 { return &r.PressureMemory })},
	{HavePressureIO, v2IOPressure, noFile, pressure(HavePressureIO, func(r *CgroupResources) *float64 { return &r.PressureIO })},
}

// A refresh reads the same few files of the same cgroups again and
// again: like the scanner's state files (cgroup_files.go), each is held
// open and read with pread at offset 0, a seq_file's regeneration. A
// file found missing (a controller the hierarchy does not have) is tried
// again only one Read in reuseRounds, and a v2 controller's file only
// while the cgroup's parent enables the controller
// (resource_controllers.go).

// heldCgroup is one cgroup's files: their directories and descriptors.
type heldCgroup struct {
	dirs [nFiles]string
	// parent is the directory of the v2 cgroup's parent ("" when none
	// is seen), and par its held cgroup.subtree_control while h needs
	// it (see keepParent).
	parent string
	par    *heldParent
	fd     [nFiles]int
	// used marks the files this Read read, asked those it was asked
	// for; missing those found absent.
	used, asked, missing uint32
	gen                  uint64
	round                uint
	// last is what the last Read found, after the start of scan number
	// scan (0: no scanner says).
	last *CgroupResources
	scan uint64
}

func (r *ResourceReader) newHeld(k CgroupKey) *heldCgroup {
	// Rounds start apart, so that the files read one Read in several
	// are not all read in the same one.
	h := &heldCgroup{round: uint(len(r.held))}
	v2 := ""
	if k.V2 != "" && k.V2 != "/" {
		v2 = r.mounts.V2Dir(k.V2)
	}
	h.parent = r.parentDir(v2)
	v1 := r.mounts.V1
	mount := map[string]string{"memory": v1.Memory, "cpu": v1.CPU, "cpuacct": v1.CPUAcct, "pids": v1.PIDs, "blkio": v1.Blkio}
	for i := range h.fd {
		h.fd[i] = -1
		f := fileNames[i]
		switch {
		case f.v1 == "":
			h.dirs[i] = v2
		case k.V1 != "" && k.V1 != "/" && mount[f.v1] != "":
			h.dirs[i] = cgroupDir(mount[f.v1], "/", k.V1)
		}
	}
	return h
}

// file reads one file of h; nil when it is missing or unreadable.
func (r *ResourceReader) file(h *heldCgroup, f resFile) []byte {
	bit := uint32(1) << f
	if h.dirs[f] == "" {
		return nil
	}
	h.asked |= bit
	if h.missing&bit != 0 && h.round%reuseRounds != 0 {
		return nil
	}
	if h.fd[f] < 0 && !r.mayExist(h, f) {
		h.missing |= bit
		return nil
	}
	h.used |= bit
	r.reads++
	data, err := r.readHeld(&h.fd[f], filepath.Join(h.dirs[f], fileNames[f].name), true)
	if err != nil {
		h.missing |= bit
		return nil
	}
	h.missing &^= bit
	return data
}

// readHeld reads the cgroupfs file at path (v2, or either with v1)
// through the descriptor *fd holds (-1: none), opening one and holding it
// when the budget has room, and otherwise with open/read/close.
func (r *ResourceReader) readHeld(fd *int, path string, v1 bool) ([]byte, error) {
	if *fd >= 0 {
		n, err := preadOnce(*fd, r.buf)
		if err == nil && n < len(r.buf) {
			return r.buf[:n], nil
		}
		// A removed cgroup's file fails (ENODEV); a longer one than the
		// buffer is read whole below.
		r.fds.close(fd)
	}
	if r.fds != nil && r.fds.take() {
		nfd, err := openOnCgroupfs(path, v1)
		if err == nil {
			if n, err := preadOnce(nfd, r.buf); err == nil && n < len(r.buf) {
				*fd = nfd
				return r.buf[:n], nil
			}
			closeFD(nfd)
		}
		r.fds.held.Add(-1)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return readFileInto(path, &r.buf, 1<<20, false)
}

func (r *ResourceReader) closeFile(h *heldCgroup, f resFile) { r.fds.close(&h.fd[f]) }

// closeUnused closes the files this Read did not need, and starts the
// next Read's count.
func (h *heldCgroup) closeUnused(r *ResourceReader) {
	for f := range nFiles {
		if h.used&(1<<f) == 0 {
			r.closeFile(h, f)
		}
	}
	h.used, h.asked = 0, 0
}

func (r *ResourceReader) drop(k CgroupKey, h *heldCgroup) {
	for f := range nFiles {
		r.closeFile(h, f)
	}
	if h.par != nil {
		h.par.users--
	}
	delete(r.held, k)
}
