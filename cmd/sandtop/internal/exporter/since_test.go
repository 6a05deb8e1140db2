package exporter

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
)

// series gathers one metric from the exporter, each value keyed by its
// labels' values in name order, joined with "/".
func series(t *testing.T, e *Exporter, name string) map[string]float64 {
	t.Helper()
	mfs, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var vals []string
			for _, l := range m.GetLabel() {
				vals = append(vals, l.GetValue())
			}
			out[strings.Join(vals, "/")] = m.GetGauge().GetValue()
		}
	}
	return out
}

func secs(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// A badge's window is the time between the last scan that saw the sandbox
// without it and the first that saw it with it; a sandbox that carried it
// from the first scan on (or after a restart) may have carried it since
// it started, and the window says so.
func TestBadgeWindows(t *testing.T) {
	orphan := []model.Badge{model.BadgeOrphan}
	e, err := New(nil, Options{Runtimes: []string{"vm0"}, PerSandbox: true, PerSandboxLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	observe := func(s int, boxes ...box) {
		t.Helper()
		e.Observe(fixedView(at(s), 0, 0, boxes...), nil, time.Millisecond)
	}
	check := func(what, name string, want map[string]float64) {
		t.Helper()
		got := series(t, e, name)
		if len(got) != len(want) {
			t.Errorf("%s: %s = %v, want %v", what, name, got, want)
			return
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s: %s = %v, want %v", what, name, got, want)
				return
			}
		}
	}
	// First scan: "old" is already an orphan (started 200 s after boot,
	// two hours and more before t0): seen at t0, maybe since its start.
	observe(0, box{id: "old", runtime: "vm0", badges: orphan, procs: 1, start: 200},
		box{id: "new", runtime: "vm0", procs: 1, start: 9_000})
	check("first scan", "sandtop_badged_since_timestamp_seconds", map[string]float64{"orphan/vm0": secs(t0)})
	check("first scan", "sandtop_badged_since_earliest_timestamp_seconds", map[string]float64{"orphan/vm0": secs(boot) + 200})

	// "new" loses its supervisor between 15 s and 30 s: its window is
	// those 15 s, however long it ran before.
	observe(15, box{id: "old", runtime: "vm0", badges: orphan, procs: 1, start: 200},
		box{id: "new", runtime: "vm0", procs: 1, start: 9_000})
	observe(30, box{id: "old", runtime: "vm0", badges: orphan, procs: 1, start: 200},
		box{id: "new", runtime: "vm0", badges: orphan, procs: 1, start: 9_000})
	check("new orphaned", "sandtop_sandbox_badge_since_timestamp_seconds", map[string]float64{
		"orphan/old//vm0": secs(t0), "orphan/new//vm0": secs(at(30))})
	check("new orphaned", "sandtop_sandbox_badge_since_earliest_timestamp_seconds", map[string]float64{
		"orphan/old//vm0": secs(boot) + 200, "orphan/new//vm0": secs(at(15))})
	// The runtime's series: the longest-orphaned sandbox's first sighting,
	// the earliest any can have become one.
	check("new orphaned", "sandtop_badged_since_timestamp_seconds", map[string]float64{"orphan/vm0": secs(t0)})

	// "old" is torn down: the runtime's since moves to "new"'s. (A
	// healthy sandbox takes its pid, so that "new"'s root keeps its own.)
	observe(45, box{id: "aaa", runtime: "vm0", procs: 1, start: 300}, box{id: "new", runtime: "vm0", badges: orphan, procs: 1, start: 9_000})
	check("old gone", "sandtop_badged_since_timestamp_seconds", map[string]float64{"orphan/vm0": secs(at(30))})
	check("old gone", "sandtop_badged_since_earliest_timestamp_seconds", map[string]float64{"orphan/vm0": secs(at(15))})

	// A failed scan changes nothing.
	e.Observe(nil, errors.New("open /proc: permission denied"), 0)
	check("failed scan", "sandtop_badged_since_timestamp_seconds", map[string]float64{"orphan/vm0": secs(at(30))})

	// The ID is reused by a new sandbox (another root) that is an orphan
	// at once: a window of its own, back to its start.
	observe(60, box{id: "new", runtime: "vm0", badges: orphan, procs: 1, start: 9_950})
	check("reused ID", "sandtop_sandbox_badge_since_timestamp_seconds", map[string]float64{"orphan/new//vm0": secs(at(60))})
	check("reused ID", "sandtop_sandbox_badge_since_earliest_timestamp_seconds", map[string]float64{"orphan/new//vm0": secs(boot) + 9_950})

	// No orphan left: no window series, the count stays at 0.
	observe(75, box{id: "new", runtime: "vm0", procs: 1, start: 9_950})
	check("none", "sandtop_badged_since_timestamp_seconds", map[string]float64{})
	none := map[string]float64{}
	for _, b := range model.Badges {
		none[string(b)+"/vm0"] = 0
	}
	check("none", "sandtop_sandboxes_badged", none)

	// serve restarts: what it saw before is gone, so the window opens
	// again at its first scan and reaches back to the sandbox's start.
	e, err = New(nil, Options{Runtimes: []string{"vm0"}, PerSandbox: true, PerSandboxLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	observe(90, box{id: "new", runtime: "vm0", badges: orphan, procs: 1, start: 9_950})
	check("restart", "sandtop_badged_since_timestamp_seconds", map[string]float64{"orphan/vm0": secs(at(90))})
	check("restart", "sandtop_badged_since_earliest_timestamp_seconds", map[string]float64{"orphan/vm0": secs(boot) + 9_950})
}
