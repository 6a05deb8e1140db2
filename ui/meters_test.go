package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/proc"
)

// TestHeaderMeters: the header carries the host's CPU, memory and load
// from the snapshot (CPU once two refreshes measured it), and they are the
// first thing to go when the line is narrow.
func TestHeaderMeters(t *testing.T) {
	withHost := func(at time.Duration, busy, total uint64) *proc.Snapshot {
		v := fleetViews(1)[0]
		snap := *v.Snapshot
		snap.Time = snap.Time.Add(at)
		snap.Host = &proc.Host{Load: [3]float64{0.52, 0.4, 1.33}, MemTotal: 8 << 30, MemAvailable: 5 << 30, CPU: proc.CPUTimes{Busy: busy, Total: total}}
		return &snap
	}
	c := &cpuSampler{}
	c.update(withHost(0, 1000, 4000))
	c.update(withHost(time.Second, 1050, 4200)) // 50 of 200 ticks busy
	v := fleetViews(1)[0]
	view := *v
	view.Snapshot = withHost(time.Second, 1050, 4200)
	s := DefaultStyles()
	h := headerState{view: &view, sum: summarize(&view), interval: time.Second, cpu: c}

	wide := ansi.Strip(s.header(h, 250))
	if !strings.Contains(wide, "cpu 25%  mem 3.0G/8.0G  load 0.52 0.40 1.33") {
		t.Errorf("no host meters at 250 columns:\n%s", wide)
	}
	top := strings.SplitN(ansi.Strip(s.header(h, 150)), "\n", 2)[0]
	if strings.Contains(top, "load") || !strings.Contains(top, "testhost") {
		t.Errorf("at 150 columns the meters go first, the host name stays:\n%s", top)
	}

	// Before a second refresh the CPU is not known yet.
	first := &cpuSampler{}
	first.update(withHost(0, 1000, 4000))
	h.cpu = first
	if got := ansi.Strip(s.header(h, 250)); !strings.Contains(got, "cpu -  mem") {
		t.Errorf("CPU shown before it was measured:\n%s", got)
	}
}
