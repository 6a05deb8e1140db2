package model

import (
	"os"
	"testing"

	"github.com/sandtop/sandtop/cmd/sandsim/benchfleet"
	"github.com/sandtop/sandtop/proc"
)

// TestMain closes the fleet the benchmarks share once everything has run.
func TestMain(m *testing.M) { os.Exit(benchfleet.Run(m)) }

// BenchmarkBuild groups a snapshot of a bulk sandsim fleet (about ten
// processes per sandbox, see cmd/sandsim/benchfleet) with the presets:
// steady is the watch loop's Builder, which remembers rule matches per
// identity and builds on the previous view; cold is a throwaway Build, as
// `sandtop list` does. Issue 6 wants it linear in the processes and under a
// tenth of a steady scan (BenchmarkScanSteady); ns/proc shows the first.
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
			})
			b.Run("cold", func(b *testing.B) {
				var v *View
				b.ReportAllocs()
				stop := benchfleet.CPUTimer(b)
				for b.Loop() {
					v = Build(snap, rules, nil)
				}
				stop()
				reportPerProc(b, snap, v)
			})
		})
	}
}

func reportPerProc(b *testing.B, snap *proc.Snapshot, v *View) {
	b.ReportMetric(float64(len(snap.Procs)), "procs")
	b.ReportMetric(float64(len(v.Sandboxes)), "sandboxes")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(snap.Procs)), "ns/proc")
}
