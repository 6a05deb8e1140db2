package model

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
)

// TestWatch follows a podman container through the trouble a Watch
// finds: its cgroup's OOM counter grows, its process stays in D, and at
// last it is gone while its conmon lives on. The figures come from the
// snapshot, as a proc.ResourceReader leaves them.
func TestWatch(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cgroup := "/libpod_parent/libpod-" + id
	t0 := time.Unix(1_800_000_000, 0)
	rules := Effective(nil, true)
	b := NewBuilder(rules)
	var w Watch
	var prev *View
	conmon := modeltest.Proc(50, 1, "/usr/bin/conmon --api-version 1 -c "+id+" -u "+id, modeltest.Cgroup("/libpod_parent/conmon"), modeltest.Ticks(30))
	refresh := func(at time.Duration, oomKills uint64, procs ...*proc.Process) (*View, *Sandbox) {
		t.Helper()
		snap := modeltest.Snapshot(proc.Snapshot{Time: t0.Add(at), BootTime: t0.Add(-time.Hour), ClockTicks: 100}, procs...)
		v := b.Build(snap, prev)
		wants, dstate := ResourceWants(v, ResourceNeeds{})
		snap.Resources = map[proc.CgroupKey]*proc.CgroupResources{}
		for _, w := range wants {
			snap.Resources[w.Key] = &proc.CgroupResources{Have: proc.HaveCPU | proc.HaveMemory | proc.HaveOOM, CPUUsec: 2_000_000, MemoryBytes: 64 << 20, OOMKills: oomKills}
		}
		snap.Wchans = map[int]string{}
		for _, pid := range dstate {
			snap.Wchans[pid] = "fuse_wait_answer"
		}
		prev = w.Apply(v)
		return prev, prev.Sandbox("podman:" + id)
	}
	worker := func(state byte) *proc.Process {
		return modeltest.Proc(60, 50, "/bin/worker", modeltest.Cgroup(cgroup), modeltest.NSpid(60, 1), modeltest.State(state), modeltest.Ticks(500))
	}

	v, sb := refresh(0, 2, conmon, worker('S'))
	if sb == nil || sb.Cgroup != cgroup {
		t.Fatalf("no podman sandbox in its cgroup %s: %+v", cgroup, sb)
	}
	r := v.Resources(sb)
	if r == nil || r.Source != SourceCgroup || r.Workload.CPUSeconds != 2 || r.Overhead.CPUSeconds != 0.3 || r.Overhead.Processes != 1 || r.Workload.MemoryBytes != 64<<20 {
		t.Fatalf("resources %+v: want the workload from the cgroup, conmon as overhead", r)
	}
	if len(sb.Badges) != 0 {
		t.Fatalf("first look: badges %v; kills before sandtop watched are not its news", sb.Badges)
	}
	if _, sb = refresh(5*time.Second, 3, conmon, worker('D')); !sb.HasBadge(BadgeOOM) || sb.HasBadge(BadgeStuck) {
		t.Fatalf("after oom_kill grew: badges %v, want oom and not yet stuck", sb.Badges)
	}
	if e := sb.Trouble.OOM[0]; e.Source != "cgroup" || e.Kills != 1 || !strings.Contains(e.Detail, "from 2 to 3") {
		t.Errorf("oom evidence %+v", e)
	}
	if _, sb = refresh(34*time.Second, 3, conmon, worker('D')); sb.HasBadge(BadgeStuck) {
		t.Fatalf("29 s in D: stuck already")
	}
	v, sb = refresh(36*time.Second, 3, conmon, worker('D'))
	if !sb.HasBadge(BadgeStuck) || len(sb.Trouble.Stuck) != 1 {
		t.Fatalf("31 s in D: badges %v", sb.Badges)
	}
	if e := sb.Trouble.Stuck[0]; e.PID != 60 || e.Wchan != "fuse_wait_answer" || v.Time.Sub(e.Since) != 31*time.Second {
		t.Errorf("stuck evidence %+v", e)
	}
	if _, sb = refresh(37*time.Second, 3, conmon, worker('S')); sb.HasBadge(BadgeStuck) {
		t.Errorf("out of D: still stuck")
	}
	if _, sb = refresh(38*time.Second, 3, conmon, worker('D')); sb.HasBadge(BadgeStuck) {
		t.Errorf("back in D: the clock did not start again")
	}
	if sb.HasBadge(BadgeHollow) {
		t.Fatalf("hollow with its container alive")
	}
	v, sb = refresh(40*time.Second, 3, conmon)
	if sb == nil || !sb.HasBadge(BadgeHollow) || !strings.Contains(sb.Trouble.Hollow, "conmon pid 50") {
		t.Fatalf("conmon alone: %+v", sb)
	}
	if d := v.Document(false); !strings.Contains(mustJSON(t, d), `"hollow": "conmon pid 50 is alive, and no workload process is left`) {
		t.Errorf("JSON lacks the hollow evidence")
	}
}

func mustJSON(t *testing.T, d Document) string {
	t.Helper()
	var b strings.Builder
	if err := d.Encode(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestResourcesJSON holds the resources block to its field names and its
// nulls: figures the cgroup lacks and limits it does not set are null.
func TestResourcesJSON(t *testing.T) {
	limit, cores := uint64(64<<20), 0.5
	r := &Resources{
		Source: SourceCgroup, CPUSeconds: 2.5, MemoryBytes: 48 << 20, MemoryLimitBytes: &limit, CPULimitCores: &cores, PIDs: 3,
		Pressure: Pressure{Memory: &cores},
		Overhead: Part{CPUSeconds: 0.5, MemoryBytes: 1 << 20, Processes: 1}, Workload: Part{CPUSeconds: 2, MemoryBytes: 47 << 20, Processes: 2},
		WorkloadNote: noteCgroup,
	}
	b, err := json.Marshal(resourcesJSON(r))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cpu_seconds":2.5,"memory_bytes":50331648,"memory_peak_bytes":null,"memory_limit_bytes":67108864,"cpu_limit_cores":0.5,` +
		`"pids":3,"pids_limit":null,"io_read_bytes":null,"io_write_bytes":null,"oom_kills":null,"pressure":{"cpu":null,"memory":0.5,"io":null},` +
		`"source":"cgroup","overhead":{"cpu_seconds":0.5,"memory_bytes":1048576,"processes":1},"workload":{"cpu_seconds":2,"memory_bytes":49283072,"processes":2},` +
		`"workload_is":"the processes in the sandbox's cgroup"}`
	if string(b) != want {
		t.Errorf("resources JSON\n got %s\nwant %s", b, want)
	}
}

// TestResourceWantsOnce: a view judged once reads no badge figures (a
// counter's growth takes two looks) and no wait channels (stuck takes a
// while), only the figures it shows, and every figure of the sandboxes
// in Full; a sandbox off screen (not in Shown) gets the badges' figures
// only.
func TestResourceWantsOnce(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cgroup := "/libpod_parent/libpod-" + id
	conmon := modeltest.Proc(50, 1, "/usr/bin/conmon --api-version 1 -c "+id+" -u "+id, modeltest.Cgroup("/libpod_parent/conmon"))
	worker := modeltest.Proc(60, 50, "/bin/worker", modeltest.Cgroup(cgroup), modeltest.NSpid(60, 1), modeltest.State('D'))
	snap := modeltest.Snapshot(proc.Snapshot{Time: time.Unix(1_800_000_000, 0), ClockTicks: 100}, conmon, worker)
	v := Build(snap, Effective(nil, true), nil)
	sb := v.Sandbox("podman:" + id)
	if sb == nil {
		t.Fatal("no podman sandbox")
	}
	key := proc.CgroupKey{V2: cgroup}
	for _, tc := range []struct {
		name   string
		n      ResourceNeeds
		want   proc.Figure // 0: no want
		dstate bool
	}{
		{"every figure", ResourceNeeds{}, proc.AllFigures, true},
		{"shown figures and the badges'", ResourceNeeds{Figures: proc.HaveIO}, proc.HaveIO | BadgeFigures, true},
		{"once, nothing shown", ResourceNeeds{Once: true}, 0, false},
		{"once, IO shown", ResourceNeeds{Once: true, Figures: proc.HaveIO}, proc.HaveIO, false},
		{"once, in the detail pane", ResourceNeeds{Once: true, Full: map[string]bool{sb.Key(): true}}, proc.AllFigures, false},
		{"IO shown, the sandbox on screen", ResourceNeeds{Figures: proc.HaveIO, Shown: map[string]bool{sb.Key(): true}}, proc.HaveIO | BadgeFigures, true},
		{"IO shown, the sandbox off screen", ResourceNeeds{Figures: proc.HaveIO, Shown: map[string]bool{}}, BadgeFigures, true},
		{"off screen, in the detail pane", ResourceNeeds{Figures: proc.HaveIO, Shown: map[string]bool{}, Full: map[string]bool{sb.Key(): true}}, proc.AllFigures, true},
	} {
		wants, dstate := ResourceWants(v, tc.n)
		var got proc.Figure
		for _, w := range wants {
			if w.Key == key {
				got = w.Figures
			}
		}
		if got != tc.want || (len(dstate) > 0) != tc.dstate {
			t.Errorf("%s: figures %b and D members %v; want %b, D members read: %v", tc.name, got, dstate, tc.want, tc.dstate)
		}
	}
}

// A container restarted under its name between two refreshes gets a new
// cgroup at the old path, whose oom_kill counter starts again at 0: its
// first kill is news, though the count is below the old cgroup's.
func TestWatchOOMCounterOfANewCgroup(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cgroup := "/libpod_parent/libpod-" + id
	t0 := time.Unix(1_800_000_000, 0)
	rules := Effective(nil, true)
	conmon := modeltest.Proc(50, 1, "/usr/bin/conmon --api-version 1 -c "+id+" -u "+id, modeltest.Cgroup("/libpod_parent/conmon"))
	worker := modeltest.Proc(60, 50, "/bin/worker", modeltest.Cgroup(cgroup), modeltest.NSpid(60, 1))
	var w Watch
	look := func(at time.Duration, kills uint64) *Sandbox {
		snap := modeltest.Snapshot(proc.Snapshot{Time: t0.Add(at), BootTime: t0.Add(-time.Hour), ClockTicks: 100}, conmon, worker)
		v := Build(snap, rules, nil)
		wants, _ := ResourceWants(v, ResourceNeeds{})
		snap.Resources = map[proc.CgroupKey]*proc.CgroupResources{}
		for _, w := range wants {
			snap.Resources[w.Key] = &proc.CgroupResources{Have: proc.HaveOOM, OOMKills: kills}
		}
		return w.Apply(v).Sandbox("podman:" + id)
	}
	for i, step := range []struct {
		kills uint64
		oom   bool
	}{{5, false}, {5, false}, {0, false}, {1, true}, {1, true}} {
		sb := look(time.Duration(i)*2*time.Second, step.kills)
		if sb == nil {
			t.Fatalf("look %d: no sandbox", i)
		}
		if sb.HasBadge(BadgeOOM) != step.oom {
			t.Fatalf("look %d, oom_kill %d: badges %v, want oom %v", i, step.kills, sb.Badges, step.oom)
		}
	}
}
