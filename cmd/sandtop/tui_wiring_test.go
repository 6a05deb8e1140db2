package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/hostview"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
	"github.com/sandtop/sandtop/ui"
)

// TestFleetTeardownEndToEnd runs the real thing against real processes: a
// sandsim fleet, the real scanner and presets, the real teardown engine.
// It opens the TUI, selects one sandbox, presses K, confirms, watches the
// engine's steps stream in and the sandbox leave the list, then checks with
// a fresh scan that every process of it is gone and the others live.
func TestFleetTeardownEndToEnd(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Scenario: "ui-e2e", Sandboxes: []fleet.SandboxSpec{
		{Name: "target", Runtime: fleet.Containerd, Zombies: 1},
		{Name: "vm", Runtime: fleet.VM0},
		{Name: "box", Runtime: fleet.Boxlite, Detached: true},
	}})
	man := f.Manifest()
	target := man.Sandbox("target").ID

	rules := model.Effective(nil, true)
	before := fleettest.View(t, rules)
	sb := before.Sandbox(target)
	if sb == nil {
		t.Fatalf("sandtop does not see the fleet's sandbox %s", target)
	}
	var doomed []proc.Identity
	for _, m := range sb.Members {
		doomed = append(doomed, m.ID())
	}
	others := map[string]int{}
	for _, name := range []string{"vm", "box"} {
		id := man.Sandbox(name).ID
		if o := before.Sandbox(id); o != nil {
			others[id] = len(o.Members)
		} else {
			t.Fatalf("sandtop does not see the fleet's sandbox %s (%s)", name, id)
		}
	}

	g := &globals{procRoot: "/proc"}
	sc, err := g.scanner(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	o := &tuiOpts{interval: 250 * time.Millisecond, grace: time.Second, audit: audit}
	opts, err := o.uiOptions(g, rules, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := ui.New(opts)
	t.Cleanup(func() { _ = m.Shutdown() })
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 45))
	t.Cleanup(func() { _ = tm.Quit() })
	waitScreenFor(t, tm, "row 1 of") // the list is drawn

	// Other fleets may share the host: narrow the list to the target with
	// the filter, as an operator would among many.
	typeKeys(tm, "/", "id:"+target)
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	waitScreenFor(t, tm, `filter "id:`+target+`": 1 of`, target[:model.MinShortID])
	typeKeys(tm, "K")
	waitScreenFor(t, tm, "Tear down sandbox "+sb.Name())
	typeKeys(tm, "y")
	// The steps stream in, and the list, refreshing behind the log, loses
	// the sandbox.
	waitScreenFor(t, tm, "cgroup-kill", "verify", "teardown finished", `filter "id:`+target+`": 0 of`)
	typeKeys(tm, "q")
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*ui.Model)
	if screen := fm.View(); strings.Contains(screen, "failed steps") {
		t.Errorf("teardown steps failed:\n%s", screen)
	}

	after := fleettest.View(t, rules)
	if after.Sandbox(target) != nil {
		t.Errorf("a fresh scan still finds sandbox %s", target)
	}
	for _, id := range doomed {
		got, state, err := proc.ReadIdentity("/proc", id.PID)
		if err == nil && got == id && state != 'Z' && state != 'X' {
			t.Errorf("process %s of the torn-down sandbox lives (state %c)", id, state)
		}
	}
	for id, n := range others {
		o := after.Sandbox(id)
		if o == nil || len(o.Members) != n {
			t.Errorf("bystander sandbox %s: %v, want %d live members", id, o, n)
		}
	}
	recs := auditRecords(t, audit)
	if len(recs) != 1 || recs[0].ID != target || recs[0].Via != "tui" || !recs[0].Totals.OK() {
		t.Errorf("audit records %+v", recs)
	}
}

// waitScreenFor waits until the program's output holds every string. The
// first scan of a busy host (other tests' fleets, race detector) can take
// seconds, hence the generous bound: it returns as soon as the screen
// shows what is asked.
func waitScreenFor(t *testing.T, tm *teatest.TestModel, want ...string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				return false
			}
		}
		return true
	}, teatest.WithDuration(time.Minute), teatest.WithCheckInterval(10*time.Millisecond))
}

// auditRecords reads an audit log's records.
func auditRecords(t *testing.T, path string) []teardown.AuditRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []teardown.AuditRecord
	for line := range strings.Lines(string(b)) {
		var r teardown.AuditRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// typeKeys types each string into the program, one key per rune.
func typeKeys(tm *teatest.TestModel, texts ...string) {
	for _, s := range texts {
		for _, r := range s {
			tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
		}
	}
}

// TestScanSourceMatchesFullBuild runs the watch loop's grouping (scanSource:
// one scanner, one Builder, each view built on the last) over a live fleet
// that changes under it: a forker's children come and go, a sandbox is
// frozen and thawed, a supervisor dies. Every view must say what a fresh
// Build of the same snapshot says, and show this refresh's processes, not
// last refresh's; and the Builder must have reused its last answer at
// least once, or the check proved nothing. The snapshots are cut down to
// the fleet (see fleetOnly): other tests' fleets, starting and stopping
// beside this one, would otherwise make every refresh a full Build.
func TestScanSourceMatchesFullBuild(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Scenario: "ui-reuse", Sandboxes: []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0},
		{Name: "shim", Runtime: fleet.Containerd, Zombies: 1},
		{Name: "paused", Runtime: fleet.Cube},
		{Name: "box", Runtime: fleet.Boxlite, Escape: true},
		{Name: "forker", Runtime: fleet.Docker, Forker: true},
	}})
	man := f.Manifest()
	rules := model.Effective(nil, true)
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	b := model.NewBuilder(rules)
	var prev *model.View
	// Forty refreshes, and more (up to 300) while none has reused: the
	// forker's children can keep a busy host's refreshes full Builds.
	shared := 0
	for i := 0; i < 40 || (shared == 0 && i < 300); i++ {
		switch i {
		case 10:
			if err := f.Freeze(man.Sandbox("paused").ID); err != nil {
				t.Fatal(err)
			}
		case 20:
			if err := f.Thaw(man.Sandbox("paused").ID); err != nil {
				t.Fatal(err)
			}
		case 30:
			if err := f.KillSupervisor(man.Sandbox("vm").ID); err != nil {
				t.Fatal(err)
			}
		}
		full, err := sc.Scan()
		if err != nil {
			t.Fatal(err)
		}
		snap := fleetOnly(full, man.Owner.PID)
		got := b.Build(snap, prev)
		want := model.Build(snap, rules, prev)
		if g, w := describeView(t, got), describeView(t, want); g != w {
			t.Fatalf("refresh %d: the Builder's view differs from a full Build:\n--- builder\n%s\n--- full\n%s", i, g, w)
		}
		for _, sb := range got.Sandboxes {
			if prev != nil && prev.Sandbox(sb.ID) == sb {
				shared++
			}
			for _, m := range sb.Members {
				if snap.Proc(m.PID) != m.Process {
					t.Fatalf("refresh %d: sandbox %s shows pid %d from an older snapshot", i, sb.ID, m.PID)
				}
			}
		}
		prev = got
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d sandboxes shared with the previous view", shared)
	if shared == 0 {
		t.Error("no refresh reused a sandbox: the comparison never saw the reuse path")
	}
}

// describeView is the JSON document plus what it leaves out: how each
// member joined and the supervisor's verdict.
func describeView(t *testing.T, v *model.View) string {
	t.Helper()
	doc, err := json.Marshal(v.Document(true))
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	for _, sb := range v.Sandboxes {
		s += fmt.Sprintf("\n%s aliases=%v supervised=%v note=%q dead=%v zombies=%d", sb.ID, sb.Aliases, sb.Supervised, sb.SupervisorNote, sb.Dead, sb.Zombies)
		for _, m := range sb.Members {
			s += fmt.Sprintf("\n  %d via=%v by=%s depth=%d", m.PID, m.Via, m.MatchedBy, m.Depth)
		}
	}
	return s
}

// fleetOnly returns snap cut down to PID 1, the scanning process and the
// fleet under owner (its subreaper, so escaped processes stay under it).
// Unchanged processes stay the scanner's own pointers, as reuse needs.
func fleetOnly(snap *proc.Snapshot, owner int) *proc.Snapshot {
	out := *snap
	out.Procs = nil
	out.Cgroups, out.Freezers = map[string]proc.CgroupState{}, map[string]proc.CgroupState{}
	under := map[int]bool{}
	var inFleet func(p *proc.Process, depth int) bool
	inFleet = func(p *proc.Process, depth int) bool {
		if v, ok := under[p.PID]; ok {
			return v
		}
		parent := snap.Proc(p.PPID)
		v := p.PID == owner || (parent != nil && parent != p && depth < 64 && inFleet(parent, depth+1))
		under[p.PID] = v
		return v
	}
	for _, p := range snap.Procs {
		if p.PID == 1 || p.PID == snap.Self || inFleet(p, 0) {
			out.Procs = append(out.Procs, p)
			if st, ok := snap.Cgroups[p.Cgroup]; ok {
				out.Cgroups[p.Cgroup] = st
			}
			if st, ok := snap.Freezers[p.Freezer]; ok {
				out.Freezers[p.Freezer] = st
			}
		}
	}
	return &out
}

// TestSourceSettlesWhatIsNotShown: the screen's Source tells its scans
// which dedicated cgroups to settle (proc.ScanHints): those of the
// sandboxes the screen shows nothing of, and no longer once it shows
// one (on screen, expanded, in the detail pane).
func TestSourceSettlesWhatIsNotShown(t *testing.T) {
	man := fleettest.Start(t, fleet.Spec{Scenario: "settle", Sandboxes: []fleet.SandboxSpec{
		{Name: "shown", Runtime: fleet.Containerd, Bare: true, Leaves: 2},
		{Name: "hidden", Runtime: fleet.Containerd, Bare: true, Leaves: 2},
	}}).Manifest()
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	src := hostview.NewSource(sc, model.Effective(nil, true), 0, nil)
	v, err := src.Scan()
	if err != nil {
		t.Fatal(err)
	}
	sandbox := func(name string) *model.Sandbox {
		t.Helper()
		sb := v.Sandbox(man.Sandbox(name).ID)
		if sb == nil || sb.Cgroup == "" {
			t.Fatalf("sandbox %s: %+v, want one with a dedicated cgroup", name, sb)
		}
		return sb
	}
	shown, hidden := sandbox("shown"), sandbox("hidden")
	for _, tc := range []struct {
		name  string
		needs model.ResourceNeeds
		want  bool // hidden's cgroup settled
	}{
		{"one on screen", model.ResourceNeeds{Shown: map[string]bool{shown.Key(): true}}, true},
		{"the other expanded", model.ResourceNeeds{Shown: map[string]bool{shown.Key(): true}, Open: map[string]bool{hidden.Key(): true}}, false},
		{"the other in the detail pane", model.ResourceNeeds{Shown: map[string]bool{shown.Key(): true}, Full: map[string]bool{hidden.Key(): true}}, false},
		{"every sandbox shown", model.ResourceNeeds{}, false},
	} {
		src.SetResourceNeeds(tc.needs)
		if v, err = src.Scan(); err != nil {
			t.Fatal(err)
		}
		settled := v.Snapshot.Settled
		if settled[shown.Cgroup] || settled[hidden.Cgroup] != tc.want {
			t.Errorf("%s: settled %v; want %s only: %v", tc.name, settled, hidden.Cgroup, tc.want)
		}
	}
}
