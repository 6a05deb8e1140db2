package ui

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
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

	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	eng, err := teardown.New(teardown.Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	m := New(Options{
		Source: NewScanSource(sc, rules), Killer: NewEngineKiller(eng, 0),
		Interval: 250 * time.Millisecond, Grace: time.Second, AuditPath: audit, LookupUser: testLookup,
	})
	t.Cleanup(m.Shutdown)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 45))
	t.Cleanup(func() { _ = tm.Quit() })
	waitFor(t, tm, "sandboxes ·")

	// Other fleets may share the host: narrow the list to the target with
	// the filter, as an operator would among many.
	send(tm, "/")
	send(tm, spell("id:"+target)...)
	send(tm, "enter")
	waitFor(t, tm, `filter "id:`+target+`": 1 of`, target[:model.MinShortID])
	send(tm, "K")
	waitFor(t, tm, "Tear down sandbox "+sb.Name())
	send(tm, "y")
	// The steps stream in, and the list, refreshing behind the log, loses
	// the sandbox.
	waitFor(t, tm, "cgroup-kill", "verify", "teardown finished", `filter "id:`+target+`": 0 of`)
	fm := finalModel(t, tm)
	if fm.panel.failed != 0 {
		t.Errorf("%d teardown steps failed:\n%s", fm.panel.failed, fm.panel.vp.View())
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
