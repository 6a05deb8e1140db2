package ui

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// TestScanSourceMatchesFullBuild runs the watch loop's grouping (one
// scanner, one Builder, each view built on the last) over a live fleet
// that changes under it: a forker's children come and go, a sandbox is
// frozen and thawed, a supervisor dies. Every view must say what a fresh
// Build of the same snapshot says, and show this refresh's processes, not
// last refresh's; and the Builder must have reused its last answer at
// least once, or the check proved nothing.
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
	shared := 0
	for i := range 40 {
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
		snap, err := sc.Scan()
		if err != nil {
			t.Fatal(err)
		}
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
				if snap.ByPID[m.PID] != m.Process {
					t.Fatalf("refresh %d: sandbox %s shows pid %d from an older snapshot", i, sb.ID, m.PID)
				}
			}
		}
		prev = got
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d sandboxes shared with the previous view over 40 refreshes", shared)
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
