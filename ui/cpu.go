package ui

import (
	"cmp"
	"slices"
	"time"

	"github.com/sandtop/sandtop/proc"
)

// cpuSampler turns cumulative CPU ticks into a rate between two refreshes,
// as top does: Δ(utime+stime) / USER_HZ / Δwall. Ticks are matched by
// identity, so a recycled pid starts from zero instead of inheriting its
// predecessor's count.
//
// It runs on every refresh over every process, so it holds no map of them
// and no snapshot: the last refresh's ticks are a slice in pid order (as
// snapshots list processes), matched to the new one's in one merge walk,
// and the two slices are swapped and reused. (A map of every identity,
// built anew each refresh, was 0.6 MB of garbage a second at 10,000
// processes, and holding the last snapshot for its time kept its index
// alive.)
type cpuSampler struct {
	prevTime    time.Time
	prev, spare []cpuTicks
	// pct holds only the rates above zero: most processes of a big host are
	// idle, and of reads a missing identity as 0 anyway.
	pct map[proc.Identity]float64
	// valid is set once an interval has been measured.
	valid bool
	// host is the whole machine's busy share over the last interval (of
	// the snapshots' Host CPU times), hostKnown once there is one.
	host      float64
	hostKnown bool
	hostPrev  *proc.CPUTimes
}

type cpuTicks struct {
	id    proc.Identity
	ticks uint64
}

// update takes a new snapshot and recomputes every rate. The first
// snapshot has nothing to compare with: every rate is unknown.
func (c *cpuSampler) update(snap *proc.Snapshot) {
	if !c.prevTime.IsZero() && !snap.Time.After(c.prevTime) {
		return // the same scan again: no interval to measure
	}
	c.hostKnown = false
	if h := snap.Host; h != nil {
		if c.hostPrev != nil {
			c.host, c.hostKnown = h.CPU.BusyPercent(*c.hostPrev)
		}
		times := h.CPU
		c.hostPrev = &times
	} else {
		c.hostPrev = nil
	}
	cur := c.spare[:0]
	for _, p := range snap.Procs {
		cur = append(cur, cpuTicks{p.ID(), p.CPUTicks})
	}
	if !slices.IsSortedFunc(cur, byPID) {
		slices.SortFunc(cur, byPID)
	}
	dt := snap.Time.Sub(c.prevTime).Seconds()
	c.valid = !c.prevTime.IsZero() && snap.ClockTicks > 0 && dt > 0
	if c.pct == nil {
		c.pct = map[proc.Identity]float64{}
	}
	clear(c.pct)
	if c.valid {
		j := 0
		for _, now := range cur {
			for j < len(c.prev) && c.prev[j].id.PID < now.id.PID {
				j++
			}
			// An identity not seen last time was born since: all of its
			// ticks fall inside the interval.
			var before uint64
			if j < len(c.prev) && c.prev[j].id == now.id {
				before = c.prev[j].ticks
			}
			if now.ticks <= before {
				continue // idle (or a count that went back): 0%
			}
			c.pct[now.id] = float64(now.ticks-before) / float64(snap.ClockTicks) / dt * 100
		}
	}
	c.prevTime, c.prev, c.spare = snap.Time, cur, c.prev
}

func byPID(a, b cpuTicks) int { return cmp.Compare(a.id.PID, b.id.PID) }

// known reports whether rates exist yet.
func (c *cpuSampler) known() bool { return c != nil && c.valid }

// of returns a process's CPU% over the last interval.
func (c *cpuSampler) of(p *proc.Process) float64 {
	if c == nil {
		return 0
	}
	return c.pct[p.ID()]
}
