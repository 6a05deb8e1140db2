package model

import "github.com/sandtop/sandtop/proc"

// maxDenseSpan bounds the pid range a pidIndex covers with a plain slice,
// as a multiple of the processes in the snapshot. Pids are handed out
// upwards from 300 after a wrap (kernel/pid.c, RESERVED_PIDS), so on a busy
// host they cluster in a range a few times the process count; a sparse
// range (pid_max is up to 2^22) would waste memory, and falls back to a map.
const maxDenseSpan = 16

// pidIndex maps a pid to its position in the snapshot's Procs, so that the
// per-process state of a Build lives in slices indexed by position instead
// of pid-keyed maps: at 10,000 processes, replacing the five maps of a
// Build (owner, via, matcher, members, ancestor cache) cut a steady Build's
// CPU time by about a quarter (BenchmarkBuild). A Builder keeps one and
// refills it every Build.
type pidIndex struct {
	base   int
	dense  []int32 // pid-base → position+1; 0 is "no such pid"
	sparse map[int]int32
}

// reset indexes procs.
func (x *pidIndex) reset(procs []*proc.Process) {
	x.sparse = nil
	clear(x.dense)
	x.dense = x.dense[:0]
	if len(procs) == 0 {
		return
	}
	lo, hi := procs[0].PID, procs[0].PID
	for _, p := range procs {
		lo, hi = min(lo, p.PID), max(hi, p.PID)
	}
	if span := hi - lo + 1; span <= maxDenseSpan*len(procs)+1024 {
		x.base = lo
		if cap(x.dense) < span {
			x.dense = make([]int32, span)
		}
		x.dense = x.dense[:span]
		for i, p := range procs {
			x.dense[p.PID-lo] = int32(i) + 1
		}
		return
	}
	x.sparse = make(map[int]int32, len(procs))
	for i, p := range procs {
		x.sparse[p.PID] = int32(i)
	}
}

// of returns the position of pid, or -1 when no process has it.
func (x *pidIndex) of(pid int) int {
	if x.sparse != nil {
		if i, ok := x.sparse[pid]; ok {
			return int(i)
		}
		return -1
	}
	if k := pid - x.base; k >= 0 && k < len(x.dense) {
		return int(x.dense[k]) - 1
	}
	return -1
}

// grown returns s with length n and every element zero, reusing its array
// when it is large enough.
func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
