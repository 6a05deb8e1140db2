package ui

import (
	"math"
	"testing"
	"time"

	"github.com/sandtop/sandtop/proc"
)

func TestCPUSampler(t *testing.T) {
	at := func(sec int, procs ...*proc.Process) *proc.Snapshot {
		return &proc.Snapshot{Time: t0.Add(time.Duration(sec) * time.Second), ClockTicks: 100, Procs: procs}
	}
	p := func(pid int, start, ticks uint64) *proc.Process {
		return &proc.Process{PID: pid, Start: start, CPUTicks: ticks}
	}
	carried := func(s *proc.Snapshot, pids ...int) *proc.Snapshot {
		s.Carried = pids
		return s
	}
	for _, tc := range []struct {
		name  string
		snaps []*proc.Snapshot
		probe *proc.Process
		known bool
		want  float64
	}{
		{"first scan: unknown", []*proc.Snapshot{at(0, p(10, 1, 500))}, p(10, 1, 500), false, 0},
		{"one core for 2s", []*proc.Snapshot{at(0, p(10, 1, 500)), at(2, p(10, 1, 700))}, p(10, 1, 700), true, 100},
		{"half a core", []*proc.Snapshot{at(0, p(10, 1, 500)), at(1, p(10, 1, 550))}, p(10, 1, 550), true, 50},
		{"born between scans: all its ticks count", []*proc.Snapshot{at(0), at(1, p(11, 5, 30))}, p(11, 5, 30), true, 30},
		{"pid reused: not the old process's ticks", []*proc.Snapshot{at(0, p(10, 1, 900)), at(1, p(10, 2, 20))}, p(10, 2, 20), true, 20},
		{"exits and births interleave with the pids it matches", []*proc.Snapshot{at(0, p(5, 1, 100), p(10, 1, 500), p(20, 1, 0)), at(1, p(7, 9, 10), p(10, 1, 550), p(30, 3, 5))}, p(10, 1, 550), true, 50},
		{"a snapshot out of pid order", []*proc.Snapshot{at(0, p(20, 1, 0), p(10, 1, 500)), at(1, p(30, 3, 5), p(10, 1, 575))}, p(10, 1, 575), true, 75},
		{"the same scan twice keeps the last rate", []*proc.Snapshot{at(0, p(10, 1, 0)), at(1, p(10, 1, 25)), at(1, p(10, 1, 25))}, p(10, 1, 25), true, 25},
		// A stat carried for 3 s, then read: 60 ticks over the 4 s since
		// the read before, not over the last second.
		{"a carried stat keeps its rate", []*proc.Snapshot{at(0, p(10, 1, 0)), at(1, p(10, 1, 20)), carried(at(2, p(10, 1, 20)), 10), carried(at(3, p(10, 1, 20)), 10)}, p(10, 1, 20), true, 20},
		{"read after carried: over the time since its last read", []*proc.Snapshot{at(0, p(10, 1, 0)), at(1, p(10, 1, 20)), carried(at(2, p(10, 1, 20)), 10), carried(at(3, p(10, 1, 20)), 10), carried(at(4, p(10, 1, 20)), 10), at(5, p(10, 1, 80))}, p(10, 1, 80), true, 15},
		{"carried beside others read", []*proc.Snapshot{at(0, p(5, 1, 0), p(10, 1, 0)), carried(at(1, p(5, 1, 50), p(10, 1, 0)), 10), at(2, p(5, 1, 100), p(10, 1, 40))}, p(10, 1, 40), true, 20},
		{"an identity first seen carried has no baseline to keep", []*proc.Snapshot{at(0), carried(at(1, p(10, 1, 30)), 10)}, p(10, 1, 30), true, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c cpuSampler
			for _, s := range tc.snaps {
				c.update(s)
			}
			if c.known() != tc.known {
				t.Fatalf("known() = %v, want %v", c.known(), tc.known)
			}
			if got := c.of(tc.probe); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("cpu = %v%%, want %v%%", got, tc.want)
			}
		})
	}
}
