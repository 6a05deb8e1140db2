package proc

import (
	"bytes"
	"math"
	"strconv"
)

// CgroupKey names a sandbox's dedicated cgroup: its v2 path, its v1
// path (the freezer's, which runtimes give every v1 hierarchy alike), or
// both on a hybrid host.
type CgroupKey struct {
	V2, V1 string
}

// Figure names one figure of CgroupResources, for its Have mask.
type Figure uint16

// The figures a cgroup may or may not have, by the controllers the host
// binds to the hierarchy its cgroup is in.
const (
	HaveCPU Figure = 1 << iota
	HaveMemory
	HaveMemoryPeak
	HaveMemoryLimit
	HaveCPULimit
	HavePIDs
	HavePIDsLimit
	HaveIO
	HaveOOM
	HavePressureCPU
	HavePressureMemory
	HavePressureIO
)

// CgroupResources is what a cgroup's own files say about what its tasks
// use and may use (Documentation/admin-guide/cgroup-v2.rst "Controllers",
// cgroup-v1/memory.rst, cgroup-v1/pids.rst, cgroup-v1/blkio-controller.rst).
// A figure is valid only when Have has its bit: a hybrid host keeps
// memory in v1 and pressure in v2, and a cgroup with a controller
// disabled has none of its files.
type CgroupResources struct {
	Have Figure
	// Asked is the figures the reader was asked for (0 when unknown):
	// one not asked for is missing from Have without being absent.
	Asked Figure
	// CPUUsec is the CPU time of every task in the cgroup and below.
	CPUUsec uint64
	// MemoryBytes is memory.current (v1 memory.usage_in_bytes);
	// MemoryPeak memory.peak (v1 memory.max_usage_in_bytes).
	MemoryBytes, MemoryPeak uint64
	// MemoryLimit is memory.max (v1 memory.limit_in_bytes); with
	// HaveMemoryLimit unset the cgroup has none ("max", or v1's
	// page-rounded LLONG_MAX).
	MemoryLimit uint64
	// CPULimitCores is cpu.max's quota over its period (v1
	// cpu.cfs_quota_us over cpu.cfs_period_us).
	CPULimitCores float64
	// PIDs is pids.current; PIDsLimit pids.max, set with HavePIDsLimit.
	PIDs, PIDsLimit uint64
	// IORead and IOWrite are the bytes io.stat (v1 blkio's
	// io_service_bytes) counts, summed over devices.
	IORead, IOWrite uint64
	// OOMKills counts the tasks the OOM killer killed in the cgroup
	// (memory.events oom_kill; v1 memory.oom_control oom_kill, Linux 4.13
	// and later).
	OOMKills uint64
	// Pressure is the "some avg10" of cpu.pressure, memory.pressure and
	// io.pressure: the share of the last ten seconds, in percent, in
	// which some task of the cgroup waited for that resource
	// (Documentation/accounting/psi.rst).
	PressureCPU, PressureMemory, PressureIO float64
}

// Has reports whether every figure of f was read.
func (r *CgroupResources) Has(f Figure) bool { return r != nil && r.Have&f == f }

// flatKey returns the value of key in a flat-keyed file ("key value"
// lines: cpu.stat, memory.events, memory.oom_control).
func flatKey(data []byte, key string) (uint64, bool) {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(" "))
		if ok && string(k) == key {
			return parseUint(bytes.TrimSpace(v))
		}
	}
	return 0, false
}

// parseSingle parses a file of one number, such as memory.current.
func parseSingle(data []byte) (uint64, bool) { return parseUint(bytes.TrimSpace(data)) }

// parseMax parses memory.max or pids.max: a number, or "max" for none.
func parseMax(data []byte) (limit uint64, limited, ok bool) {
	data = bytes.TrimSpace(data)
	if string(data) == "max" {
		return 0, false, true
	}
	v, ok := parseUint(data)
	return v, ok, ok
}

// v1Unlimited is the smallest memory.limit_in_bytes that means no limit:
// v1 reports PAGE_COUNTER_MAX pages, LLONG_MAX rounded down to a page
// (9223372036854771712 with 4 KiB pages). Anything at or above an
// exbibyte is taken for it, whatever the page size.
const v1Unlimited = 1 << 60

// parseCPUMax parses cpu.max, "$MAX $PERIOD", where $MAX is "max" for no
// limit.
func parseCPUMax(data []byte) (cores float64, limited, ok bool) {
	quota, period, found := bytes.Cut(bytes.TrimSpace(data), []byte(" "))
	if !found {
		return 0, false, false
	}
	if string(quota) == "max" {
		return 0, false, true
	}
	q, okq := parseUint(quota)
	p, okp := parseUint(period)
	if !okq || !okp || p == 0 {
		return 0, false, false
	}
	return float64(q) / float64(p), true, true
}

// parseIOStat sums rbytes and wbytes over the devices of a v2 io.stat:
// "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0" lines.
func parseIOStat(data []byte) (read, write uint64) {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		for f := range bytes.FieldsSeq(line) {
			k, v, ok := bytes.Cut(f, []byte("="))
			if !ok {
				continue
			}
			n, ok := parseUint(v)
			if !ok {
				continue
			}
			switch string(k) {
			case "rbytes":
				read += n
			case "wbytes":
				write += n
			}
		}
	}
	return read, write
}

// parseBlkioBytes sums Read and Write over the devices of a v1
// blkio.throttle.io_service_bytes(_recursive): "8:0 Read 4096" lines and
// a "Total N" line.
func parseBlkioBytes(data []byte) (read, write uint64) {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) != 3 {
			continue
		}
		n, ok := parseUint(f[2])
		if !ok {
			continue
		}
		switch string(f[1]) {
		case "Read":
			read += n
		case "Write":
			write += n
		}
	}
	return read, write
}

// parsePressureSome returns the avg10 of a pressure file's "some" line:
// "some avg10=0.00 avg60=0.00 avg300=0.00 total=0".
func parsePressureSome(data []byte) (float64, bool) {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("some "))
		if !ok {
			continue
		}
		for f := range bytes.FieldsSeq(rest) {
			if v, ok := bytes.CutPrefix(f, []byte("avg10=")); ok {
				x, err := strconv.ParseFloat(string(v), 64)
				if err != nil || math.IsNaN(x) || x < 0 || x > 100 {
					return 0, false
				}
				return x, true
			}
		}
	}
	return 0, false
}
