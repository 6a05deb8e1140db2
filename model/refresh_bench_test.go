package model

import (
	"fmt"
	"maps"
	"testing"

	"github.com/sandtop/sandtop/cmd/sandsim/benchfleet"
	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
)

// benchRules are the rules bulkViews's host is grouped and recorded with.
var benchRules = Effective(nil, true)

// bulkViews groups a host of 1,000 sandboxes of ten processes shaped as
// a bulk sandsim fleet is (cmd/sandsim/fleet.Bulk: Docker and containerd
// shims in turn, each with nine processes in the container's cgroup),
// built in memory (no fleet to start, the same host at every run), with
// every figure of every sandbox's cgroup, as serve and the reaper
// read them. moved is the next refresh of the same host where every
// cgroup's figures moved (its processes ran), and ticked the one where
// the shim of every sandbox ran: no sandbox is shared with the first view.
func bulkViews(b *testing.B) (v, moved, ticked *View) {
	b.Helper()
	const sock = "/run/containerd/containerd.sock"
	procs := []*proc.Process{pr(100, 1, "/usr/bin/containerd", cgroup("/system.slice/containerd.service"))}
	pid := 1000
	for i := range 1000 {
		id := fmt.Sprintf("%064x", uint64(i+1)*0x9e3779b97f4a7c15)
		ns, cg := "moby", "/system.slice/docker-"+id+".scope"
		if i%2 == 1 {
			ns, cg = "k8s.io", "/k8s.io/"+id
		}
		shim := pid
		procs = append(procs, pr(shim, 1, "/usr/bin/containerd-shim-runc-v2 -namespace "+ns+" -id "+id+" -address "+sock,
			cgroup("/system.slice/containerd.service"), modeltest.Ticks(uint64(i))))
		for range 9 {
			pid++
			procs = append(procs, pr(pid, shim, "/usr/local/bin/worker --serve", cgroup(cg), pgid(shim), modeltest.Ticks(uint64(pid))))
		}
		pid++
	}
	snap := snap(procs...)
	snap.Listeners[sock] = true
	bld := NewBuilder(benchRules)
	v = bld.Build(snap, nil)
	wants, _ := ResourceWants(v, ResourceNeeds{})
	if len(v.Sandboxes) != 1000 || len(wants) != 1000 {
		b.Fatalf("%d sandboxes, %d with a cgroup: want 1,000 of each", len(v.Sandboxes), len(wants))
	}
	snap.Resources = map[proc.CgroupKey]*proc.CgroupResources{}
	for i, w := range wants {
		snap.Resources[w.Key] = &proc.CgroupResources{Have: proc.AllFigures &^ proc.HaveCPULimit, Asked: proc.AllFigures,
			CPUUsec: uint64(i) * 1e6, MemoryBytes: 64 << 20, MemoryPeak: 80 << 20, MemoryLimit: 1 << 30,
			PIDs: 9, PIDsLimit: 4096, IORead: 1 << 20, OOMKills: 0, PressureCPU: 0.5}
	}
	ms := *snap
	ms.Resources = maps.Clone(snap.Resources)
	for k, r := range ms.Resources {
		c := *r
		c.CPUUsec += 1000
		c.MemoryBytes += 4096
		ms.Resources[k] = &c
	}
	moved = bld.Build(&ms, v)
	ticked = bld.Build(tickedCopy(snap, func(p *proc.Process) bool {
		sb := v.SandboxOf(p.ID())
		return sb != nil && sb.Root.Process == p
	}), moved)
	return v, moved, ticked
}

// BenchmarkWatchApply judges the view of 1,000 sandboxes at every
// refresh, alternating with another: steady is a host where nothing
// changed, figures-moving one whose every cgroup's figures change at
// each refresh (the sandboxes stay the same), and ticking=one-per-sandbox
// one where every sandbox changed.
func BenchmarkWatchApply(b *testing.B) {
	v, moved, ticked := bulkViews(b)
	for _, tc := range []struct {
		name  string
		other *View
	}{{"steady", v}, {"figures-moving", moved}, {"ticking=one-per-sandbox", ticked}} {
		b.Run(tc.name, func(b *testing.B) {
			var w Watch
			w.Apply(v)
			alternate(b, v, tc.other, func(in *View) { w.Apply(in) })
		})
	}
}

// BenchmarkLeftoverRecord records the judged view of 1,000 sandboxes at
// every refresh, as the live screen's leftover search does before it
// looks (Globs), alternating with another: steady is a host where nothing
// changed, ticking=one-per-sandbox one where every sandbox changed.
func BenchmarkLeftoverRecord(b *testing.B) {
	v, _, ticked := bulkViews(b)
	var w Watch
	v = w.Apply(v)
	ticked = w.Apply(ticked)
	for _, tc := range []struct {
		name  string
		other *View
	}{{"steady", v}, {"ticking=one-per-sandbox", ticked}} {
		b.Run(tc.name, func(b *testing.B) {
			lo := NewLeftovers(benchRules)
			lo.Record(v)
			alternate(b, v, tc.other, lo.Record)
		})
	}
}

// alternate times refresh over views that alternate between v and other,
// in CPU time.
func alternate(b *testing.B, v, other *View, refresh func(*View)) {
	b.ReportAllocs()
	stop := benchfleet.CPUTimer(b)
	i := 0
	for b.Loop() {
		in := v
		if i++; i%2 == 1 {
			in = other
		}
		refresh(in)
	}
	stop()
}
