package model

import (
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"

	"github.com/sandtop/sandtop/cmd/sandsim/benchfleet"
	"github.com/sandtop/sandtop/proc"
)

// TestMain closes the fleet the benchmarks share once everything has run.
func TestMain(m *testing.M) { os.Exit(benchfleet.Run(m)) }

// BenchmarkBuild groups a snapshot of a bulk sandsim fleet (about ten
// processes per sandbox, see cmd/sandsim/benchfleet) with the presets.
// steady is the watch loop's Builder, which builds on its previous view,
// on a host where nothing changed; ticking and forking alternate with a
// snapshot where some processes used CPU, or where a job started in some
// sandboxes; cold is a throwaway Build, as `sandtop list` does. Grouping
// must stay linear in the processes and under a tenth of a steady scan
// (BenchmarkScanSteady); ns/proc shows the first. live-B/proc is the heap
// that steady's Builder and view hold between refreshes (what the watch
// loop pays for grouping), and that cold's view holds.
func BenchmarkBuild(b *testing.B) {
	rules := Effective(nil, true)
	for _, n := range benchfleet.Procs() {
		b.Run(benchfleet.Name(n), func(b *testing.B) {
			benchfleet.Start(b, n)
			sc, err := proc.NewScanner(proc.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer sc.Close()
			snap, err := sc.Scan()
			if err != nil {
				b.Fatal(err)
			}
			b.Run("steady", func(b *testing.B) {
				bld := NewBuilder(rules)
				prev := bld.Build(snap, nil)
				b.ReportAllocs()
				stop := benchfleet.CPUTimer(b)
				for b.Loop() {
					prev = bld.Build(snap, prev)
				}
				stop()
				reportPerProc(b, snap, prev)
				held := liveHeap()
				runtime.KeepAlive(bld)
				runtime.KeepAlive(prev)
				reportLive(b, snap, held)
			})
			// Refreshes where processes ticked CPU (one member of every
			// sandbox, a VM's firecracker process; or every process), or
			// where a job started in ten sandboxes (a container's shell)
			// and, the next time, exited.
			for _, tc := range []struct {
				name  string
				other func(v *View) *proc.Snapshot
			}{
				{"ticking=one-per-sandbox", func(v *View) *proc.Snapshot {
					return tickedCopy(snap, func(p *proc.Process) bool {
						sb := v.SandboxOf(p.ID())
						return sb != nil && sb.Root.Process == p
					})
				}},
				{"ticking=all", func(*View) *proc.Snapshot {
					return tickedCopy(snap, func(*proc.Process) bool { return true })
				}},
				{"forking=10-sandboxes", func(v *View) *proc.Snapshot { return withChildren(snap, v, 10) }},
			} {
				b.Run(tc.name, func(b *testing.B) {
					bld := NewBuilder(rules)
					prev := bld.Build(snap, nil)
					other := tc.other(prev)
					b.ReportAllocs()
					stop := benchfleet.CPUTimer(b)
					n := 0
					for b.Loop() {
						s := snap
						if n++; n%2 == 1 {
							s = other
						}
						prev = bld.Build(s, prev)
					}
					stop()
					reportPerProc(b, snap, prev)
					if bld.Stats().Reused < b.N {
						b.Fatalf("%d of %d builds reused the last one", bld.Stats().Reused, b.N)
					}
				})
			}
			b.Run("cold", func(b *testing.B) {
				var v *View
				b.ReportAllocs()
				stop := benchfleet.CPUTimer(b)
				for b.Loop() {
					v = Build(snap, rules, nil)
				}
				stop()
				reportPerProc(b, snap, v)
				held := liveHeap()
				runtime.KeepAlive(v)
				reportLive(b, snap, held)
			})
		})
	}
}

func reportPerProc(b *testing.B, snap *proc.Snapshot, v *View) {
	b.ReportMetric(float64(len(snap.Procs)), "procs")
	b.ReportMetric(float64(len(v.Sandboxes)), "sandboxes")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(snap.Procs)), "ns/proc")
}

// liveHeap returns the bytes of heap that a collection leaves.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// reportLive reports as live-B/proc how much more the heap held (held,
// while the benchmark's Builder and view were alive) than it does now
// that they are not: the caller uses them for the last time before.
func reportLive(b *testing.B, snap *proc.Snapshot, held uint64) {
	if now := liveHeap(); held > now {
		b.ReportMetric(float64(held-now)/float64(len(snap.Procs)), "live-B/proc")
	}
}

// tickedCopy returns snap with the processes chosen by tick replaced by
// copies one CPU tick further on, as the scanner reports a process that
// ran.
func tickedCopy(snap *proc.Snapshot, tick func(p *proc.Process) bool) *proc.Snapshot {
	s := *snap
	s.Procs = slices.Clone(snap.Procs)
	for i, p := range s.Procs {
		if tick(p) {
			c := *p
			c.CPUTicks++
			s.Procs[i] = &c
		}
	}
	return &s
}

// withChildren returns snap with a new child under the root of each of the
// first n sandboxes of v, in its parent's cgroups and process group.
func withChildren(snap *proc.Snapshot, v *View, n int) *proc.Snapshot {
	s := *snap
	s.Procs = slices.Clone(snap.Procs)
	pid := snap.Procs[len(snap.Procs)-1].PID
	for _, sb := range v.Sandboxes[:min(n, len(v.Sandboxes))] {
		pid++
		parent := sb.Root.Process
		c := &proc.Process{PID: pid, PPID: parent.PID, PGID: parent.PGID, SID: parent.SID, State: 'S',
			Comm: "sh", Argv: []string{"sh", "-c", "job"}, Start: parent.Start + 1, Cgroup: parent.Cgroup, Freezer: parent.Freezer}
		s.Procs = append(s.Procs, c)
	}
	return &s
}
