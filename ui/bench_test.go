package ui

import (
	"fmt"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// benchView is a host with n sandboxes of per processes each: a shim and
// its children.
func benchView(n, per int) *model.View {
	var procs []*proc.Process
	pid := 1000
	for i := range n {
		id := fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15)
		root := pid
		procs = append(procs, pr(root, 1, time.Hour, "/usr/bin/containerd-shim-runc-v2 -id "+id+" -address "+shimSocket))
		pid++
		for range per - 1 {
			procs = append(procs, pr(pid, root, time.Minute, "/usr/bin/worker --serve --port 8080"))
			pid++
		}
	}
	return model.Build(snapshot(0, procs...), testRules, nil)
}

// BenchmarkView draws the screen with every sandbox expanded. The cost
// must not depend on how many rows there are: only the visible window is
// drawn (compare the two sizes).
func BenchmarkView(b *testing.B) {
	for _, sz := range []struct{ sandboxes, per int }{{100, 10}, {1000, 10}} {
		b.Run(fmt.Sprintf("%d_processes_in_%d_sandboxes", sz.sandboxes*sz.per, sz.sandboxes), func(b *testing.B) {
			v := benchView(sz.sandboxes, sz.per)
			m := newTestModel(b, &fakeSource{views: []*model.View{v}}, &fakeKiller{})
			settle(m, size(160, 45), m.Init()())
			settle(m, keys("e")...)
			if got, want := len(m.table.rows), sz.sandboxes*(sz.per+1); got != want {
				b.Fatalf("%d rows, want %d", got, want)
			}
			settle(m, keys("pgdown", "pgdown")...)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

// BenchmarkRefresh is the per-scan cost: CPU rates, the header counts and
// the row list, which is linear in the processes (the View is not).
func BenchmarkRefresh(b *testing.B) {
	v := benchView(1000, 10)
	m := newTestModel(b, &fakeSource{views: []*model.View{v}}, &fakeKiller{})
	settle(m, size(160, 45), m.Init()())
	settle(m, keys("e")...)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.apply(viewMsg{view: v, users: testUsers})
	}
}
