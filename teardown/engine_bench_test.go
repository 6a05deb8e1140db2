package teardown

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc/proctest"
)

// BenchmarkTeardown tears down one sandbox of about 1,000 processes with an
// immediate SIGKILL, as the engine's Run does from pin to cleanup: in a
// dedicated cgroup (a detached boxlite box whose shim has 996 `sleep`
// leaves; cgroup.kill)
// and without one (a vm0 tree whose firecracker has 995 leaf children;
// SIGSTOP top-down, then SIGKILL through each pidfd). The targets are under
// 200 ms and under 1 s. Each iteration starts a fresh fleet (not timed).
func BenchmarkTeardown(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: skipping a benchmark that starts a fleet of real processes")
	}
	if os.Geteuid() != 0 {
		proctest.SkipMissing(b, "needs root: the fleet's sandboxes live in cgroups, and teardown signals them")
	}
	cases := []struct {
		name   string
		sb     fleet.SandboxSpec
		cgroup bool
	}{
		{"cgroup", fleet.SandboxSpec{Name: "big", Runtime: fleet.Boxlite, Detached: true, Leaves: 996}, true},
		{"no-cgroup", fleet.SandboxSpec{Name: "big", Runtime: fleet.VM0, Leaves: 995}, false},
	}
	rules := model.Effective(nil, true)
	eng, err := New(Options{Rules: rules})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			procs := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				f, plan := benchPlan(b, tc.sb, rules, eng)
				if (plan.CgroupDir != "") != tc.cgroup {
					b.Fatalf("plan cgroup %q: want a dedicated cgroup = %v", plan.CgroupDir, tc.cgroup)
				}
				procs = len(plan.Members)
				b.StartTimer()
				t := eng.Run(context.Background(), plan, func(Event) {})
				b.StopTimer()
				if !t.OK() {
					b.Errorf("teardown not OK: %+v", t)
				}
				if err := f.Close(); err != nil {
					b.Errorf("fleet close: %v", err)
				}
			}
			b.ReportMetric(float64(procs), "procs")
		})
	}
}

// benchPlan starts a fleet of one sandbox and plans its teardown.
func benchPlan(b *testing.B, sb fleet.SandboxSpec, rules model.Rules, eng *Engine) (*fleet.Fleet, *Plan) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := fleet.Start(ctx, fleet.Spec{Sandboxes: []fleet.SandboxSpec{sb}}, fleet.Options{})
	if err != nil {
		b.Fatalf("start fleet: %v", err)
	}
	v := fleettest.View(b, rules)
	target, err := v.Resolve(f.Manifest().Sandbox(sb.Name).ID)
	if err != nil {
		f.Close()
		b.Fatalf("resolve: %v", err)
	}
	plan, err := PlanSandbox(v, target, PlanOptions{Protected: eng.Protected()})
	if err != nil {
		f.Close()
		b.Fatalf("plan: %v", err)
	}
	return f, plan
}
