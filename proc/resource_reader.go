package proc

import (
	"cmp"
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
	return &ResourceReader{procRoot: procRoot, mounts: m, buf: make([]byte, 4096), kmsg: newKmsgReader(kmsg)}
}

// Close releases the kernel log.
func (r *ResourceReader) Close() { r.kmsg.close() }

// Read fills snap's Resources for keys, its Wchans for the processes of
// pids that are in state D, and its OOMKills with the kernel log's kills
// of the last hour. It replaces those fields, so a snapshot handed out
// already must not be given.
func (r *ResourceReader) Read(snap *Snapshot, keys []CgroupKey, pids []int) {
	if len(keys) > 0 {
		snap.Resources = make(map[CgroupKey]*CgroupResources, len(keys))
		for _, k := range keys {
			if _, ok := snap.Resources[k]; !ok {
				res := r.cgroup(k)
				snap.Resources[k] = &res
			}
		}
	}
	for _, pid := range pids {
		p := snap.ByPID[pid]
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

// cgroup reads the resource files of one cgroup: v2's, then v1's for the
// figures v2 lacks (a hybrid host binds memory, pids, cpu and blkio to v1).
func (r *ResourceReader) cgroup(k CgroupKey) CgroupResources {
	var res CgroupResources
	if dir := r.mounts.V2Dir(k.V2); k.V2 != "" && k.V2 != "/" && dir != "" {
		r.v2(dir, &res)
	}
	if k.V1 != "" && k.V1 != "/" {
		r.v1(k.V1, &res)
	}
	return res
}

// file reads one small control file; nil when it is missing or unreadable.
func (r *ResourceReader) file(dir, name string) []byte {
	if dir == "" {
		return nil
	}
	data, err := readFileInto(filepath.Join(dir, name), &r.buf, 1<<20, false)
	if err != nil {
		return nil
	}
	return data
}

func (r *ResourceReader) v2(dir string, res *CgroupResources) {
	if v, ok := flatKey(r.file(dir, "cpu.stat"), "usage_usec"); ok {
		res.CPUUsec, res.Have = v, res.Have|HaveCPU
	}
	if v, ok := parseSingle(r.file(dir, "memory.current")); ok {
		res.MemoryBytes, res.Have = v, res.Have|HaveMemory
	}
	if v, ok := parseSingle(r.file(dir, "memory.peak")); ok {
		res.MemoryPeak, res.Have = v, res.Have|HaveMemoryPeak
	}
	if v, limited, ok := parseMax(r.file(dir, "memory.max")); ok && limited {
		res.MemoryLimit, res.Have = v, res.Have|HaveMemoryLimit
	}
	if v, ok := flatKey(r.file(dir, "memory.events"), "oom_kill"); ok {
		res.OOMKills, res.Have = v, res.Have|HaveOOM
	}
	if c, limited, ok := parseCPUMax(r.file(dir, "cpu.max")); ok && limited {
		res.CPULimitCores, res.Have = c, res.Have|HaveCPULimit
	}
	if v, ok := parseSingle(r.file(dir, "pids.current")); ok {
		res.PIDs, res.Have = v, res.Have|HavePIDs
	}
	if v, limited, ok := parseMax(r.file(dir, "pids.max")); ok && limited {
		res.PIDsLimit, res.Have = v, res.Have|HavePIDsLimit
	}
	if data := r.file(dir, "io.stat"); data != nil {
		res.IORead, res.IOWrite = parseIOStat(data)
		res.Have |= HaveIO
	}
	for _, p := range []struct {
		name string
		to   *float64
		bit  Figure
	}{{"cpu.pressure", &res.PressureCPU, HavePressureCPU}, {"memory.pressure", &res.PressureMemory, HavePressureMemory}, {"io.pressure", &res.PressureIO, HavePressureIO}} {
		if v, ok := parsePressureSome(r.file(dir, p.name)); ok {
			*p.to, res.Have = v, res.Have|p.bit
		}
	}
}

// v1 reads the v1 controllers' files of path for the figures res lacks.
// A limit file that is present and says "unlimited" leaves the limit unset
// (Have is then decided by the controller's presence: see HaveMemory).
func (r *ResourceReader) v1(path string, res *CgroupResources) {
	m := r.mounts.V1
	dir := func(mount string) string {
		if mount == "" {
			return ""
		}
		return cgroupDir(mount, "/", path)
	}
	if mem := dir(m.Memory); mem != "" && !res.Has(HaveMemory) {
		if v, ok := parseSingle(r.file(mem, "memory.usage_in_bytes")); ok {
			res.MemoryBytes, res.Have = v, res.Have|HaveMemory
			if v, ok := parseSingle(r.file(mem, "memory.max_usage_in_bytes")); ok {
				res.MemoryPeak, res.Have = v, res.Have|HaveMemoryPeak
			}
			if v, ok := parseSingle(r.file(mem, "memory.limit_in_bytes")); ok && v < v1Unlimited {
				res.MemoryLimit, res.Have = v, res.Have|HaveMemoryLimit
			}
			if v, ok := flatKey(r.file(mem, "memory.oom_control"), "oom_kill"); ok {
				res.OOMKills, res.Have = v, res.Have|HaveOOM
			}
		}
	}
	if acct := dir(m.CPUAcct); acct != "" && !res.Has(HaveCPU) {
		if ns, ok := parseSingle(r.file(acct, "cpuacct.usage")); ok {
			res.CPUUsec, res.Have = ns/1000, res.Have|HaveCPU
		}
	}
	if cpu := dir(m.CPU); cpu != "" && !res.Has(HaveCPULimit) {
		// A quota of -1 is none; parseUint refuses it.
		if q, ok := parseSingle(r.file(cpu, "cpu.cfs_quota_us")); ok {
			if p, ok := parseSingle(r.file(cpu, "cpu.cfs_period_us")); ok && p > 0 {
				res.CPULimitCores, res.Have = float64(q)/float64(p), res.Have|HaveCPULimit
			}
		}
	}
	if pids := dir(m.PIDs); pids != "" && !res.Has(HavePIDs) {
		if v, ok := parseSingle(r.file(pids, "pids.current")); ok {
			res.PIDs, res.Have = v, res.Have|HavePIDs
			if v, limited, ok := parseMax(r.file(pids, "pids.max")); ok && limited {
				res.PIDsLimit, res.Have = v, res.Have|HavePIDsLimit
			}
		}
	}
	if blk := dir(m.Blkio); blk != "" && !res.Has(HaveIO) {
		if data := r.file(blk, "blkio.throttle.io_service_bytes_recursive"); data != nil {
			res.IORead, res.IOWrite = parseBlkioBytes(data)
			res.Have |= HaveIO
		}
	}
}
