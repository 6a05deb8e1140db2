package proc

import (
	"bytes"
	"fmt"
	"strconv"
)

// Host is the machine as a whole, as htop's meters show it: load, memory
// and CPU time. Read with every scan, so that the screen's header needs no
// read of its own.
type Host struct {
	// Load is the 1, 5 and 15 minute load average (/proc/loadavg).
	Load [3]float64
	// MemTotal and MemAvailable are in bytes (/proc/meminfo); available is
	// what can be had without swapping, the kernel's own estimate.
	MemTotal, MemAvailable uint64
	// CPU is the aggregate "cpu" line of /proc/stat, in clock ticks.
	CPU CPUTimes
}

// CPUTimes are the ticks all CPUs spent busy and in all, since boot. Busy
// is everything but idle and iowait; guest time is already counted in
// user and nice (proc(5)), so it is not added again.
type CPUTimes struct {
	Busy, Total uint64
}

// BusyPercent is the share of CPU time spent busy between prev and c, in
// percent of the whole machine, and false when no time passed.
func (c CPUTimes) BusyPercent(prev CPUTimes) (float64, bool) {
	if c.Total <= prev.Total || c.Busy < prev.Busy {
		return 0, false
	}
	return 100 * float64(c.Busy-prev.Busy) / float64(c.Total-prev.Total), true
}

// ReadHost reads the three files through read (given a name under the
// procfs root: "loadavg", "meminfo", "stat").
func ReadHost(read func(name string) ([]byte, error)) (*Host, error) {
	var h Host
	b, err := read("loadavg")
	if err == nil {
		h.Load, err = ParseLoadavg(b)
	}
	if err != nil {
		return nil, fmt.Errorf("loadavg: %w", err)
	}
	if b, err = read("meminfo"); err == nil {
		h.MemTotal, h.MemAvailable, err = ParseMeminfo(b)
	}
	if err != nil {
		return nil, fmt.Errorf("meminfo: %w", err)
	}
	if b, err = read("stat"); err == nil {
		h.CPU, err = ParseStatCPU(b)
	}
	if err != nil {
		return nil, fmt.Errorf("stat: %w", err)
	}
	return &h, nil
}

// ParseLoadavg parses /proc/loadavg: "0.52 0.40 0.33 2/311 12345", of
// which the first three fields are the load averages (proc(5)).
func ParseLoadavg(b []byte) ([3]float64, error) {
	var l [3]float64
	f := bytes.Fields(b)
	if len(f) < 3 {
		return l, fmt.Errorf("%q: want 3 load averages", b)
	}
	for i := range l {
		v, err := strconv.ParseFloat(string(f[i]), 64)
		if err != nil {
			return l, fmt.Errorf("load average %q: %w", f[i], err)
		}
		l[i] = v
	}
	return l, nil
}

// ParseMeminfo returns MemTotal and MemAvailable from /proc/meminfo, in
// bytes (the file says kB, meaning KiB; proc(5)). A kernel older than 3.14
// has no MemAvailable: then free + buffers + cached stands in, as free(1)
// did.
func ParseMeminfo(b []byte) (total, available uint64, err error) {
	var free, buffers, cached uint64
	haveTotal, haveAvail := false, false
	for line := range bytes.Lines(b) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		f := bytes.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", k, err)
		}
		n <<= 10
		switch string(k) {
		case "MemTotal":
			total, haveTotal = n, true
		case "MemAvailable":
			available, haveAvail = n, true
		case "MemFree":
			free = n
		case "Buffers":
			buffers = n
		case "Cached":
			cached = n
		}
	}
	if !haveTotal {
		return 0, 0, fmt.Errorf("no MemTotal")
	}
	if !haveAvail {
		available = min(free+buffers+cached, total)
	}
	return total, available, nil
}

// ParseStatCPU returns the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal guest guest_nice, in ticks
// (proc(5); kernels before 2.6 have fewer fields, which count as 0).
func ParseStatCPU(b []byte) (CPUTimes, error) {
	for line := range bytes.Lines(b) {
		f := bytes.Fields(line)
		if len(f) < 5 || string(f[0]) != "cpu" {
			continue
		}
		var t CPUTimes
		for i, s := range f[1:min(len(f), 9)] { // guest and guest_nice are in user and nice
			n, err := strconv.ParseUint(string(s), 10, 64)
			if err != nil {
				return CPUTimes{}, fmt.Errorf("cpu field %d %q: %w", i+1, s, err)
			}
			t.Total += n
			if i != 3 && i != 4 { // idle, iowait
				t.Busy += n
			}
		}
		return t, nil
	}
	return CPUTimes{}, fmt.Errorf("no cpu line")
}
