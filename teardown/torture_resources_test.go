package teardown

import (
	"context"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// usage is one sample of this process's resources.
type usage struct {
	rss, heap            uint64
	fds, goroutines      int
	scans, sandboxes, at int
	// held is what the scanner may hold open by design: one descriptor
	// per live process and per cgroup state file (proc/pid_table.go), and
	// a v2 cgroup's cpu.stat and cgroup.procs (proc/cgroup_cpu.go).
	held int
}

func sampleUsage(t *testing.T) usage {
	t.Helper()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{rss: rssBytes(t), heap: ms.HeapAlloc, fds: openFDs(t), goroutines: runtime.NumGoroutine()}
}

// TestTortureWatchResources watches a churning fleet the way the live
// screen does (cmd/sandtop's scanSource: one proc.Scanner and one
// model.Builder fed its previous view, refreshed in a loop) for
// TORTURE_WATCH, sampling RSS, heap, open descriptors and goroutines.
// After a warm-up, descriptors and goroutines must not grow at all and
// memory only within a bound: a scan that leaks one descriptor or one
// goroutine per refresh would show thousands. (The teardown package cannot
// import the command that wires it, so the loop is scanSource's three
// lines.) The scanner holds a descriptor per live process on purpose, so
// descriptors are measured above that allowance, and must all be back
// once the scanner is closed.
func TestTortureWatchResources(t *testing.T) {
	dur := envDuration(t, "TORTURE_WATCH", defaultWatch)
	// Fork loops in four runtimes' shapes, a paused and an orphaned
	// sandbox: the fleet churns processes and cgroup states all along.
	fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "fork-docker", Runtime: fleet.Docker, Forker: true, Leaves: 5},
		{Name: "fork-vm", Runtime: fleet.VM0, Forker: true},
		{Name: "fork-session", Runtime: fleet.Cloudflare, Forker: true},
		{Name: "fork-pod", Runtime: fleet.Kubernetes, Forker: true, Zombies: 2},
		{Name: "paused", Runtime: fleet.Cube, Pause: fleet.PauseFreeze},
		{Name: "orphan", Runtime: fleet.Containerd, Orphan: true, Escape: true},
	}})
	fdsBefore := openFDs(t)
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			sc.Close()
		}
	})
	b := model.NewBuilder(model.Effective(nil, true))

	const refresh = 50 * time.Millisecond // 20x the screen's fastest rate
	warmup := max(dur/4, 5*time.Second)
	var samples []usage
	var prev *model.View
	scans := 0
	start := time.Now()
	next := start
	for time.Since(start) < dur {
		snap, v, err := scanAndBuild(sc, b, prev)
		if err != nil {
			t.Fatalf("scan %d: %v", scans, err)
		}
		prev = v
		scans++
		if time.Now().After(next) {
			u := sampleUsage(t)
			u.scans, u.sandboxes, u.at = scans, len(v.Sandboxes), int(time.Since(start)/time.Second)
			u.held = len(snap.Procs) + 3*len(snap.Cgroups) + len(snap.Freezers)
			samples = append(samples, u)
			next = next.Add(time.Second)
		}
		time.Sleep(refresh)
	}
	runtime.GC()
	end := sampleUsage(t)
	sc.Close()
	closed = true
	fdsAfter := openFDs(t)

	var base, peak usage
	baseExtra, peakExtra := 0, 0 // descriptors beyond the scanner's allowance
	for _, s := range samples {
		if time.Duration(s.at)*time.Second < warmup {
			base, baseExtra = s, s.fds-s.held
			continue
		}
		peak.rss, peak.heap = max(peak.rss, s.rss), max(peak.heap, s.heap)
		peak.fds, peak.goroutines = max(peak.fds, s.fds), max(peak.goroutines, s.goroutines)
		peakExtra = max(peakExtra, s.fds-s.held)
		peak.held = max(peak.held, s.held)
	}
	const mb = 1 << 20
	figures(t, "watch", "duration", time.Since(start).Round(time.Second), "scans", scans,
		"rss_after_warmup_mb", base.rss/mb, "rss_peak_mb", peak.rss/mb, "rss_end_mb", end.rss/mb,
		"heap_after_warmup_mb", base.heap/mb, "heap_end_after_gc_mb", end.heap/mb,
		"fds_after_warmup", base.fds, "fds_peak", peak.fds, "fds_beyond_held_after_warmup", baseExtra,
		"fds_beyond_held_peak", peakExtra, "fds_before_scanner", fdsBefore, "fds_after_close", fdsAfter, "goroutines_after_warmup", base.goroutines, "goroutines_peak", peak.goroutines)
	// The allowance is counted from the last scan, while the scanner
	// gives back a dead process's descriptor at the next one: on a host
	// where thousands of processes come and go, a few percent of the
	// allowance can show as extra for a moment. A leak grows without
	// bound instead, and shows for certain once the scanner is closed.
	if peakExtra > baseExtra+16+peak.held/20 {
		t.Errorf("descriptors beyond one per process and cgroup grew from %d to %d", baseExtra, peakExtra)
	}
	if fdsAfter > fdsBefore {
		t.Errorf("%d descriptors open after the scanner closed, %d before it was made", fdsAfter, fdsBefore)
	}
	if peak.goroutines > base.goroutines {
		t.Errorf("goroutines grew from %d to %d", base.goroutines, peak.goroutines)
	}
	// The heap is what a leak would grow; RSS also carries the Go
	// runtime's lazily returned pages, hence the looser bound.
	if end.heap > base.heap+16*mb {
		t.Errorf("heap after GC grew from %d MB to %d MB", base.heap/mb, end.heap/mb)
	}
	if peak.rss > base.rss+base.rss/2+32*mb {
		t.Errorf("RSS grew from %d MB to %d MB", base.rss/mb, peak.rss/mb)
	}
}

// TestTortureEngineDescriptors runs the engine over and over and checks
// that every pinned pidfd, and every goroutine a teardown starts, is gone
// once Run returns.
func TestTortureEngineDescriptors(t *testing.T) {
	proctest.RequireRoot(t)
	n := envInt(t, "TORTURE_ENGINE_RUNS", defaultEngineRepeats)
	eng, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(grace time.Duration) {
		tree := exec.Command("/bin/sh", "-c", "sleep 600 & sleep 600 & wait")
		if err := tree.Start(); err != nil {
			t.Fatal(err)
		}
		defer reap(tree)
		waitChildren(t, tree.Process.Pid, 2)
		plan, err := PlanSubtree(fleettest.View(t, nil), tree.Process.Pid, PlanOptions{Grace: grace, Protected: eng.Protected()})
		if err != nil {
			t.Fatal(err)
		}
		if tot := eng.Run(context.Background(), plan, func(Event) {}); !tot.OK() || tot.Killed != 3 {
			t.Fatalf("teardown: %+v", tot)
		}
	}
	run(0) // warm up: lazily made runtime threads, timers, the poller
	fds, goroutines := openFDs(t), runtime.NumGoroutine()
	for i := range n {
		run([]time.Duration{0, 20 * time.Millisecond}[i%2])
	}
	// Goroutines of the last run may still be on their way out: wait for
	// the counts to come back (a leak never does, and fails below).
	var fdsAfter, goroutinesAfter int
	proctest.Eventually(5*time.Second, func() bool {
		fdsAfter, goroutinesAfter = openFDs(t), runtime.NumGoroutine()
		return fdsAfter == fds && goroutinesAfter <= goroutines
	})
	figures(t, "engine-fds", "runs", n, "processes_killed", 3*n, "fds_before", fds, "fds_after", fdsAfter,
		"goroutines_before", goroutines, "goroutines_after", goroutinesAfter)
	if fdsAfter != fds {
		t.Errorf("open descriptors %d after %d teardowns, %d before", fdsAfter, n, fds)
	}
	if goroutinesAfter > goroutines {
		t.Errorf("goroutines %d after %d teardowns, %d before", goroutinesAfter, n, goroutines)
	}
}
