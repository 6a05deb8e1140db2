package ui

import (
	"github.com/sandtop/sandtop/proc"
)

// cpuSampler turns cumulative CPU ticks into a rate between two refreshes,
// as top does: Δ(utime+stime) / USER_HZ / Δwall. Ticks are keyed by
// identity, so a recycled pid starts from zero instead of inheriting its
// predecessor's count.
type cpuSampler struct {
	prev  *proc.Snapshot
	ticks map[proc.Identity]uint64
	// pct holds only the rates above zero: most processes of a big host are
	// idle, and of reads a missing identity as 0 anyway (at 10,000 processes
	// a map of every identity was ~0.4 MB held and allocated a refresh).
	pct map[proc.Identity]float64
}

// update takes a new snapshot and recomputes every rate. The first
// snapshot has nothing to compare with: every rate is unknown.
func (c *cpuSampler) update(snap *proc.Snapshot) {
	if c.prev != nil && !snap.Time.After(c.prev.Time) {
		return // the same scan again: no interval to measure
	}
	ticks := make(map[proc.Identity]uint64, len(snap.Procs))
	for _, p := range snap.Procs {
		ticks[p.ID()] = p.CPUTicks
	}
	c.pct = nil
	if c.prev != nil && snap.ClockTicks > 0 {
		if dt := snap.Time.Sub(c.prev.Time).Seconds(); dt > 0 {
			c.pct = map[proc.Identity]float64{}
			for id, now := range ticks {
				// An identity not seen last time was born since: all of its
				// ticks fall inside the interval.
				before := c.ticks[id]
				if now <= before {
					continue // idle (or a count that went back): 0%
				}
				c.pct[id] = float64(now-before) / float64(snap.ClockTicks) / dt * 100
			}
		}
	}
	c.prev, c.ticks = snap, ticks
}

// known reports whether rates exist yet.
func (c *cpuSampler) known() bool { return c != nil && c.pct != nil }

// of returns a process's CPU% over the last interval.
func (c *cpuSampler) of(p *proc.Process) float64 {
	if c == nil {
		return 0
	}
	return c.pct[p.ID()]
}
