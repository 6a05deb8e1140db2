package exporter

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// boot is the fixed views' boot time; a process's Start counts ticks
// (100 a second) from it.
var boot = time.Unix(1_700_000_000, 0)

// box describes one sandbox of a fixed view.
type box struct {
	id, runtime, namespace string
	badges                 []model.Badge
	// start is the root's start, in seconds after boot.
	start int
	// procs members, each with cpu ticks and rss; zombies of them are zombies.
	procs, zombies int
	cpuTicks, rss  uint64
}

// fixedView builds a view by hand: the exporter reads only what a view
// says, so these views need no host.
func fixedView(at time.Time, unattributed, unreadable int, boxes ...box) *model.View {
	snap := &proc.Snapshot{Time: at, BootTime: boot, ClockTicks: 100, PartlyUnreadable: unreadable,
		Listeners: map[string]bool{}}
	v := &model.View{Time: at, Host: "fixture", Snapshot: snap}
	pid := 100
	for _, b := range boxes {
		sb := &model.Sandbox{ID: b.id, Runtime: b.runtime, Namespace: b.namespace, Badges: b.badges}
		for _, bg := range b.badges {
			switch bg {
			case model.BadgeOrphan:
				sb.Orphan = true
			case model.BadgePaused:
				sb.Paused = true
			}
		}
		for i := range b.procs {
			pid++
			p := &proc.Process{PID: pid, PPID: 1, State: 'S', Comm: "m", Start: uint64(b.start*100 + i),
				CPUTicks: b.cpuTicks, RSS: b.rss}
			if i >= b.procs-b.zombies {
				p.State = 'Z'
				sb.Zombies++
			}
			m := &model.Member{Process: p}
			sb.Members = append(sb.Members, m)
			snap.Procs = append(snap.Procs, p)
		}
		sb.Root = sb.Members[0]
		v.Sandboxes = append(v.Sandboxes, sb)
	}
	for range unattributed {
		pid++
		p := &proc.Process{PID: pid, State: 'S'}
		v.Unattributed = append(v.Unattributed, p)
		snap.Procs = append(snap.Procs, p)
	}
	return v
}

// source hands out views (or errors) in order, one per Scan.
type source struct {
	views []*model.View
	errs  []error
}

func (s *source) Scan() (*model.View, error) {
	v, err := s.views[0], s.errs[0]
	s.views, s.errs = s.views[1:], s.errs[1:]
	return v, err
}

var t0 = boot.Add(10_000 * time.Second)

func demoView() *model.View {
	v := fixedView(t0, 7, 2,
		box{id: "aaa", runtime: "vm0", procs: 3, cpuTicks: 150, rss: 1 << 20, start: 100},
		box{id: "bbb", runtime: "vm0", badges: []model.Badge{model.BadgeOrphan}, procs: 2, cpuTicks: 10, rss: 4096, start: 200},
		box{id: "ccc", runtime: "vm0", badges: []model.Badge{model.BadgeOrphan, model.BadgeZombie}, procs: 4, zombies: 2, cpuTicks: 1, rss: 4096, start: 50},
		box{id: "ddd", runtime: "containerd", namespace: "k8s.io", badges: []model.Badge{model.BadgePaused}, procs: 1, cpuTicks: 0, rss: 8192, start: 300},
	)
	// ddd has a cgroup of its own with every figure and limit.
	ddd := v.Sandboxes[3]
	ddd.Cgroup = "/k8s.io/ddd"
	ddd.Members[0].Cgroup = ddd.Cgroup
	v.Snapshot.Resources = map[proc.CgroupKey]*proc.CgroupResources{{V2: ddd.Cgroup}: {
		Have:    ^proc.Figure(0),
		CPUUsec: 1_500_000, MemoryBytes: 48 << 20, MemoryPeak: 60 << 20, MemoryLimit: 64 << 20, CPULimitCores: 0.5,
		PIDs: 3, PIDsLimit: 100, IORead: 4096, IOWrite: 8192, OOMKills: 1, PressureCPU: 1, PressureMemory: 12.5, PressureIO: 0,
	}}
	var w model.Watch
	return w.Apply(v)
}

func TestCollectFixedView(t *testing.T) {
	e, err := New(nil, Options{Runtimes: []string{"vm0", "containerd", "kata"}})
	if err != nil {
		t.Fatal(err)
	}
	c := (*viewCollector)(e)
	// Before any scan: nothing that would read as a count, not even 0.
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("before the first scan: %d series, want none", n)
	}
	e.Observe(demoView(), nil, 30*time.Millisecond)
	want := `
# HELP sandtop_sandboxes Sandboxes on this host.
# TYPE sandtop_sandboxes gauge
sandtop_sandboxes{runtime="containerd"} 1
sandtop_sandboxes{runtime="kata"} 0
sandtop_sandboxes{runtime="vm0"} 3
# HELP sandtop_sandboxes_badged Sandboxes carrying a badge (orphan, zombie, paused, leftover, oom, stuck, hollow); 0 where none.
# TYPE sandtop_sandboxes_badged gauge
sandtop_sandboxes_badged{badge="hollow",runtime="containerd"} 0
sandtop_sandboxes_badged{badge="hollow",runtime="kata"} 0
sandtop_sandboxes_badged{badge="hollow",runtime="vm0"} 0
sandtop_sandboxes_badged{badge="leftover",runtime="containerd"} 0
sandtop_sandboxes_badged{badge="leftover",runtime="kata"} 0
sandtop_sandboxes_badged{badge="leftover",runtime="vm0"} 0
sandtop_sandboxes_badged{badge="oom",runtime="containerd"} 0
sandtop_sandboxes_badged{badge="oom",runtime="kata"} 0
sandtop_sandboxes_badged{badge="oom",runtime="vm0"} 0
sandtop_sandboxes_badged{badge="orphan",runtime="containerd"} 0
sandtop_sandboxes_badged{badge="orphan",runtime="kata"} 0
sandtop_sandboxes_badged{badge="orphan",runtime="vm0"} 2
sandtop_sandboxes_badged{badge="paused",runtime="containerd"} 1
sandtop_sandboxes_badged{badge="paused",runtime="kata"} 0
sandtop_sandboxes_badged{badge="paused",runtime="vm0"} 0
sandtop_sandboxes_badged{badge="stuck",runtime="containerd"} 0
sandtop_sandboxes_badged{badge="stuck",runtime="kata"} 0
sandtop_sandboxes_badged{badge="stuck",runtime="vm0"} 0
sandtop_sandboxes_badged{badge="zombie",runtime="containerd"} 0
sandtop_sandboxes_badged{badge="zombie",runtime="kata"} 0
sandtop_sandboxes_badged{badge="zombie",runtime="vm0"} 1
# HELP sandtop_sandbox_processes Processes in sandboxes.
# TYPE sandtop_sandbox_processes gauge
sandtop_sandbox_processes{runtime="containerd"} 1
sandtop_sandbox_processes{runtime="kata"} 0
sandtop_sandbox_processes{runtime="vm0"} 9
# HELP sandtop_zombie_processes Zombie processes in sandboxes.
# TYPE sandtop_zombie_processes gauge
sandtop_zombie_processes{runtime="containerd"} 0
sandtop_zombie_processes{runtime="kata"} 0
sandtop_zombie_processes{runtime="vm0"} 2
# HELP sandtop_unattributed_processes User-space processes in no sandbox.
# TYPE sandtop_unattributed_processes gauge
sandtop_unattributed_processes 7
# HELP sandtop_partly_unreadable_processes Processes some of whose fields could not be read (not root: run serve as root).
# TYPE sandtop_partly_unreadable_processes gauge
sandtop_partly_unreadable_processes 2
# HELP sandtop_oldest_orphan_start_time_seconds Start time of the oldest orphaned sandbox's root process, Unix seconds; absent while the runtime has no orphan.
# TYPE sandtop_oldest_orphan_start_time_seconds gauge
sandtop_oldest_orphan_start_time_seconds{runtime="vm0"} 1.70000005e+09
# HELP sandtop_last_scan_timestamp_seconds When the last successful scan read the host, Unix seconds.
# TYPE sandtop_last_scan_timestamp_seconds gauge
sandtop_last_scan_timestamp_seconds 1.70001e+09
# HELP sandtop_runtime_memory_bytes Memory of a runtime's sandboxes, split into the runtime's overhead and the workload.
# TYPE sandtop_runtime_memory_bytes gauge
sandtop_runtime_memory_bytes{part="overhead",runtime="containerd"} 0
sandtop_runtime_memory_bytes{part="workload",runtime="containerd"} 5.0331648e+07
sandtop_runtime_memory_bytes{part="overhead",runtime="kata"} 0
sandtop_runtime_memory_bytes{part="workload",runtime="kata"} 0
sandtop_runtime_memory_bytes{part="overhead",runtime="vm0"} 0
sandtop_runtime_memory_bytes{part="workload",runtime="vm0"} 3.162112e+06
# HELP sandtop_sandboxes_without_memory_limit Sandboxes with processes whose cgroup sets no memory limit (or that have no cgroup).
# TYPE sandtop_sandboxes_without_memory_limit gauge
sandtop_sandboxes_without_memory_limit{runtime="containerd"} 0
sandtop_sandboxes_without_memory_limit{runtime="kata"} 0
sandtop_sandboxes_without_memory_limit{runtime="vm0"} 3
# HELP sandtop_sandboxes_under_pressure Sandboxes whose cgroup's PSI some avg10 for the resource is at least 10%.
# TYPE sandtop_sandboxes_under_pressure gauge
sandtop_sandboxes_under_pressure{resource="cpu",runtime="containerd"} 0
sandtop_sandboxes_under_pressure{resource="io",runtime="containerd"} 0
sandtop_sandboxes_under_pressure{resource="memory",runtime="containerd"} 1
sandtop_sandboxes_under_pressure{resource="cpu",runtime="kata"} 0
sandtop_sandboxes_under_pressure{resource="io",runtime="kata"} 0
sandtop_sandboxes_under_pressure{resource="memory",runtime="kata"} 0
sandtop_sandboxes_under_pressure{resource="cpu",runtime="vm0"} 0
sandtop_sandboxes_under_pressure{resource="io",runtime="vm0"} 0
sandtop_sandboxes_under_pressure{resource="memory",runtime="vm0"} 0
`
	// The badges' windows have a test of their own (since_test.go).
	names := []string{"sandtop_sandboxes", "sandtop_sandboxes_badged", "sandtop_sandbox_processes", "sandtop_zombie_processes",
		"sandtop_unattributed_processes", "sandtop_partly_unreadable_processes", "sandtop_oldest_orphan_start_time_seconds",
		"sandtop_last_scan_timestamp_seconds", "sandtop_runtime_memory_bytes", "sandtop_sandboxes_without_memory_limit",
		"sandtop_sandboxes_under_pressure"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

func TestCollectPerSandbox(t *testing.T) {
	e, err := New(nil, Options{Runtimes: []string{"vm0"}, PerSandbox: true, PerSandboxLimit: 3})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(demoView(), nil, time.Millisecond)
	// Limit 3 of 4: the three troubled sandboxes, not the healthy "aaa".
	want := `
# HELP sandtop_sandbox_info Always 1, one per sandbox (with --per-sandbox).
# TYPE sandtop_sandbox_info gauge
sandtop_sandbox_info{id="bbb",namespace="",runtime="vm0"} 1
sandtop_sandbox_info{id="ccc",namespace="",runtime="vm0"} 1
sandtop_sandbox_info{id="ddd",namespace="k8s.io",runtime="containerd"} 1
# HELP sandtop_sandbox_badge 1 for each badge a sandbox carries (with --per-sandbox).
# TYPE sandtop_sandbox_badge gauge
sandtop_sandbox_badge{badge="orphan",id="bbb",namespace="",runtime="vm0"} 1
sandtop_sandbox_badge{badge="orphan",id="ccc",namespace="",runtime="vm0"} 1
sandtop_sandbox_badge{badge="paused",id="ddd",namespace="k8s.io",runtime="containerd"} 1
sandtop_sandbox_badge{badge="zombie",id="ccc",namespace="",runtime="vm0"} 1
# HELP sandtop_sandbox_cpu_seconds_total CPU time of the sandbox's processes, user and system, including members that exited while sandtop watched (with --per-sandbox).
# TYPE sandtop_sandbox_cpu_seconds_total counter
sandtop_sandbox_cpu_seconds_total{id="bbb",namespace="",runtime="vm0"} 0.2
sandtop_sandbox_cpu_seconds_total{id="ccc",namespace="",runtime="vm0"} 0.04
sandtop_sandbox_cpu_seconds_total{id="ddd",namespace="k8s.io",runtime="containerd"} 0
# HELP sandtop_sandbox_rss_bytes Resident memory of the sandbox's processes (with --per-sandbox).
# TYPE sandtop_sandbox_rss_bytes gauge
sandtop_sandbox_rss_bytes{id="bbb",namespace="",runtime="vm0"} 8192
sandtop_sandbox_rss_bytes{id="ccc",namespace="",runtime="vm0"} 16384
sandtop_sandbox_rss_bytes{id="ddd",namespace="k8s.io",runtime="containerd"} 8192
# HELP sandtop_per_sandbox_omitted Sandboxes left out of the per-sandbox series by --per-sandbox-limit (with --per-sandbox).
# TYPE sandtop_per_sandbox_omitted gauge
sandtop_per_sandbox_omitted 1
`
	names := []string{"sandtop_sandbox_info", "sandtop_sandbox_badge", "sandtop_sandbox_cpu_seconds_total",
		"sandtop_sandbox_rss_bytes", "sandtop_per_sandbox_omitted"}
	if err := testutil.CollectAndCompare((*viewCollector)(e), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	// The next scan: ccc is gone, its series go with it, and the healthy
	// aaa takes the free place.
	v := fixedView(t0.Add(15*time.Second), 7, 2,
		box{id: "aaa", runtime: "vm0", procs: 3, cpuTicks: 150, rss: 1 << 20, start: 100},
		box{id: "bbb", runtime: "vm0", badges: []model.Badge{model.BadgeOrphan}, procs: 2, cpuTicks: 10, rss: 4096, start: 200},
		box{id: "ddd", runtime: "containerd", namespace: "k8s.io", badges: []model.Badge{model.BadgePaused}, procs: 1, cpuTicks: 0, rss: 8192, start: 300},
	)
	e.Observe(v, nil, time.Millisecond)
	want = `
# HELP sandtop_sandbox_info Always 1, one per sandbox (with --per-sandbox).
# TYPE sandtop_sandbox_info gauge
sandtop_sandbox_info{id="aaa",namespace="",runtime="vm0"} 1
sandtop_sandbox_info{id="bbb",namespace="",runtime="vm0"} 1
sandtop_sandbox_info{id="ddd",namespace="k8s.io",runtime="containerd"} 1
`
	if err := testutil.CollectAndCompare((*viewCollector)(e), strings.NewReader(want), "sandtop_sandbox_info"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount((*viewCollector)(e), "sandtop_sandbox_cpu_seconds_total"); n != 3 {
		t.Errorf("cpu series after ccc left: %d, want 3", n)
	}
}

// A member that exits takes its CPU time out of the live sum; the counter
// must not fall with it.
func TestPerSandboxCPUNeverFalls(t *testing.T) {
	e, err := New(nil, Options{PerSandbox: true, PerSandboxLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	cpu := func() float64 {
		t.Helper()
		_, s, _, _ := e.last()
		return s.perSandbox[0].cpu
	}
	v1 := fixedView(t0, 0, 0, box{id: "a", runtime: "vm0", procs: 3, cpuTicks: 100, start: 1})
	e.Observe(v1, nil, 0)
	if got := cpu(); got != 3 {
		t.Fatalf("first scan: cpu %v, want 3", got)
	}
	// The same three members, each 50 ticks more.
	v2 := fixedView(t0, 0, 0, box{id: "a", runtime: "vm0", procs: 3, cpuTicks: 150, start: 1})
	e.Observe(v2, nil, 0)
	if got := cpu(); got != 4.5 {
		t.Fatalf("after each member ran 0.5 s: cpu %v, want 4.5", got)
	}
	// Two members exit; the one left ran 0.5 s more.
	v3 := fixedView(t0, 0, 0, box{id: "a", runtime: "vm0", procs: 1, cpuTicks: 200, start: 1})
	e.Observe(v3, nil, 0)
	if got := cpu(); got != 5 {
		t.Fatalf("after two members exited: cpu %v, want 5 (never less than 4.5)", got)
	}
}

func TestFailedScanKeepsLastValues(t *testing.T) {
	good := demoView()
	src := &source{views: []*model.View{good, nil}, errs: []error{nil, errors.New("open /proc: permission denied")}}
	e, err := New(src, Options{Runtimes: []string{"vm0"}})
	if err != nil {
		t.Fatal(err)
	}
	e.Refresh()
	before, err := testutil.CollectAndFormat((*viewCollector)(e), expfmt.TypeTextPlain)
	if err != nil {
		t.Fatal(err)
	}
	e.Refresh()
	after, err := testutil.CollectAndFormat((*viewCollector)(e), expfmt.TypeTextPlain)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("a failed scan changed the values:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if got := testutil.ToFloat64(e.scanErrors.WithLabelValues(SourceProc)); got != 1 {
		t.Errorf("scan errors{source=proc} = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(e.scanDuration); got != 1 {
		t.Errorf("scan duration: %d series", got)
	}
}

func TestUnreadableSocketsCounted(t *testing.T) {
	v := demoView()
	v.Snapshot.Listeners = nil
	e, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(v, nil, 0)
	if got := testutil.ToFloat64(e.scanErrors.WithLabelValues(SourceUnixSockets)); got != 1 {
		t.Errorf("scan errors{source=unix_sockets} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(e.scanErrors.WithLabelValues(SourceProc)); got != 0 {
		t.Errorf("scan errors{source=proc} = %v, want 0: the scan itself succeeded", got)
	}
}

// bigView is a view of n sandboxes over a dozen runtimes, every tenth one
// troubled, with two processes each.
func bigView(n int) *model.View {
	rts := []string{"vm0", "jailer", "boxlite", "cube", "containerd", "docker", "kata", "gvisor", "k8s", "machine", "cloudflare", "podman"}
	boxes := make([]box, n)
	for i := range boxes {
		boxes[i] = box{id: fmt.Sprintf("sb-%05d", i), runtime: rts[i%len(rts)], procs: 2, cpuTicks: 5, rss: 4096, start: i}
		switch i % 30 {
		case 0:
			boxes[i].badges = []model.Badge{model.BadgeOrphan}
		case 10:
			boxes[i].badges, boxes[i].zombies = []model.Badge{model.BadgeZombie}, 1
		case 20:
			boxes[i].badges = []model.Badge{model.BadgePaused}
		}
	}
	return fixedView(t0, 100, 0, boxes...)
}

// The label-cardinality check: the series count without --per-sandbox
// depends on the runtimes the rules know, never on the sandboxes; with it,
// at most the limit's worth of sandboxes get series, troubled first.
func TestCardinality(t *testing.T) {
	const n = 10_000
	v := bigView(n)
	var rts []string
	for _, sb := range v.Sandboxes[:12] {
		rts = append(rts, sb.Runtime)
	}
	small := fixedView(t0, 1, 0, box{id: "x", runtime: "vm0", procs: 1, start: 1, badges: []model.Badge{model.BadgeOrphan}})
	count := func(o Options, v *model.View) int {
		t.Helper()
		e, err := New(nil, o)
		if err != nil {
			t.Fatal(err)
		}
		e.Observe(v, nil, 0)
		return testutil.CollectAndCount((*viewCollector)(e))
	}
	// Per runtime: sandboxes, one per badge, processes, zombies, oldest
	// orphan (only where there is one), two per badge its sandboxes carry
	// (the window it came in), memory by part, sandboxes without a memory
	// limit, under pressure by resource; and 3 host-wide gauges.
	perRuntime := 1 + len(model.Badges) + 2 + 1 + 2*len(model.Badges) + 2 + 1 + 3
	bound := len(rts)*perRuntime + 3
	got := count(Options{Runtimes: rts}, v)
	t.Logf("10,000 sandboxes, %d runtimes, no --per-sandbox: %d series (bound %d; 1 sandbox: %d)",
		len(rts), got, bound, count(Options{Runtimes: rts}, small))
	if got > bound {
		t.Errorf("%d series for %d sandboxes, want at most %d", got, n, bound)
	}
	if got != count(Options{Runtimes: rts}, bigView(100)) {
		t.Errorf("the series count changed with the sandbox count")
	}

	const limit = 500
	e, err := New(nil, Options{Runtimes: rts, PerSandbox: true, PerSandboxLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(v, nil, 0)
	c := (*viewCollector)(e)
	for _, name := range []string{"sandtop_sandbox_info", "sandtop_sandbox_cpu_seconds_total", "sandtop_sandbox_rss_bytes"} {
		if got := testutil.CollectAndCount(c, name); got != limit {
			t.Errorf("%s: %d series, want the limit %d", name, got, limit)
		}
	}
	// 10,000/30*3 = 1,000 troubled sandboxes, more than the limit: every
	// exported sandbox is a troubled one.
	if got := testutil.CollectAndCount(c, "sandtop_sandbox_badge"); got != limit {
		t.Errorf("sandtop_sandbox_badge: %d series, want %d (only troubled sandboxes)", got, limit)
	}
	omitted := fmt.Sprintf(`
# HELP sandtop_per_sandbox_omitted Sandboxes left out of the per-sandbox series by --per-sandbox-limit (with --per-sandbox).
# TYPE sandtop_per_sandbox_omitted gauge
sandtop_per_sandbox_omitted %d
`, n-limit)
	if err := testutil.CollectAndCompare(c, strings.NewReader(omitted), "sandtop_per_sandbox_omitted"); err != nil {
		t.Error(err)
	}
	total := testutil.CollectAndCount(c)
	t.Logf("10,000 sandboxes with --per-sandbox --per-sandbox-limit %d: %d series", limit, total)
	// Each sandbox: info, cpu, rss, and three per badge (the badge and
	// its window); bigView's carry one each.
	if most := bound + limit*6 + 1; total > most {
		t.Errorf("%d series with per-sandbox, want at most %d", total, most)
	}
}

// An ID is unique only with its runtime and namespace: two containers
// "web" in two containerd namespaces, and a vm0 VM that happens to be
// called "web" too, are three sandboxes, and a scrape must carry all three
// (a duplicate series would fail the whole scrape).
func TestPerSandboxSameIDs(t *testing.T) {
	v := fixedView(t0, 0, 0,
		box{id: "web", runtime: "containerd", namespace: "default", procs: 1, cpuTicks: 100, start: 1, badges: []model.Badge{model.BadgeOrphan}},
		box{id: "web", runtime: "containerd", namespace: "k8s.io", procs: 1, cpuTicks: 200, start: 2, badges: []model.Badge{model.BadgeOrphan}},
		box{id: "web", runtime: "vm0", procs: 1, cpuTicks: 300, start: 3},
	)
	e, err := New(nil, Options{PerSandbox: true, PerSandboxLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(v, nil, 0)
	e.Observe(v, nil, 0) // the CPU counters are kept per sandbox, not per ID
	want := `
# HELP sandtop_sandbox_cpu_seconds_total CPU time of the sandbox's processes, user and system, including members that exited while sandtop watched (with --per-sandbox).
# TYPE sandtop_sandbox_cpu_seconds_total counter
sandtop_sandbox_cpu_seconds_total{id="web",namespace="",runtime="vm0"} 3
sandtop_sandbox_cpu_seconds_total{id="web",namespace="default",runtime="containerd"} 1
sandtop_sandbox_cpu_seconds_total{id="web",namespace="k8s.io",runtime="containerd"} 2
`
	if err := testutil.GatherAndCompare(e.Registry(), strings.NewReader(want), "sandtop_sandbox_cpu_seconds_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(e.Registry(), "sandtop_sandbox_badge"); err != nil || n != 2 {
		t.Errorf("badge series: %d, %v; want 2", n, err)
	}
}
