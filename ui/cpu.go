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
	// idle, and of reads a missing identity as 0 anyway. prevPct is the
	// last refresh's, which a carried stat keeps (see update); the two
	// are swapped each refresh.
	pct, prevPct map[proc.Identity]float64
	// base is the first snapshot's time, from which cpuTicks.at counts.
	base time.Time
	// valid is set once an interval has been measured.
	valid bool
	// host is the whole machine's busy share over the last interval (of
	// the snapshots' Host CPU times), hostKnown once there is one.
	host      float64
	hostKnown bool
	hostPrev  *proc.CPUTimes
}

// cpuTicks is a process's CPU time as last read, at the time since the
// sampler's base that it was read.
type cpuTicks struct {
	id    proc.Identity
	ticks uint64
	at    time.Duration
}

// update takes a new snapshot and recomputes every rate. The first
// snapshot has nothing to compare with: every rate is unknown. A process
// whose stat the snapshot carried from an earlier scan (Snapshot.Carried)
// keeps the rate it had, and its next read measures the whole time since
// the read before: its carried ticks are not a second without CPU.
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
	if c.base.IsZero() {
		c.base = snap.Time
	}
	now := snap.Time.Sub(c.base)
	cur := c.spare[:0]
	for _, p := range snap.Procs {
		cur = append(cur, cpuTicks{p.ID(), p.CPUTicks, now})
	}
	if !slices.IsSortedFunc(cur, byPID) {
		slices.SortFunc(cur, byPID)
	}
	c.valid = !c.prevTime.IsZero() && snap.ClockTicks > 0 && now > c.lastAt()
	c.pct, c.prevPct = c.prevPct, c.pct
	if c.pct == nil {
		c.pct = map[proc.Identity]float64{}
	}
	clear(c.pct)
	if c.valid {
		j, carried := 0, snap.Carried
		for i := range cur {
			e := &cur[i]
			for j < len(c.prev) && c.prev[j].id.PID < e.id.PID {
				j++
			}
			// An identity not seen last time was born since: all of its
			// ticks fall inside the interval.
			var before cpuTicks
			if j < len(c.prev) && c.prev[j].id == e.id {
				before = c.prev[j]
			} else {
				before.at = c.lastAt()
			}
			for len(carried) > 0 && carried[0] < e.id.PID {
				carried = carried[1:]
			}
			if len(carried) > 0 && carried[0] == e.id.PID && before.id == e.id {
				*e = before
				if r := c.prevPct[e.id]; r > 0 {
					c.pct[e.id] = r
				}
				continue
			}
			if e.ticks <= before.ticks || e.at <= before.at {
				continue // idle (or a count that went back): 0%
			}
			c.pct[e.id] = float64(e.ticks-before.ticks) / float64(snap.ClockTicks) / (e.at - before.at).Seconds() * 100
		}
	}
	c.prevTime, c.prev, c.spare = snap.Time, cur, c.prev
}

// lastAt is the time of the last refresh, since the base.
func (c *cpuSampler) lastAt() time.Duration { return c.prevTime.Sub(c.base) }

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
