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
				if snap.ByPID[m.PID] != m.Process {
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
	out.Procs, out.ByPID = nil, map[int]*proc.Process{}
	out.Cgroups, out.Freezers = map[string]proc.CgroupState{}, map[string]proc.CgroupState{}
	under := map[int]bool{}
	var inFleet func(p *proc.Process, depth int) bool
	inFleet = func(p *proc.Process, depth int) bool {
		if v, ok := under[p.PID]; ok {
			return v
		}
		parent := snap.ByPID[p.PPID]
		v := p.PID == owner || (parent != nil && parent != p && depth < 64 && inFleet(parent, depth+1))
		under[p.PID] = v
		return v
	}
	for _, p := range snap.Procs {
		if p.PID == 1 || p.PID == snap.Self || inFleet(p, 0) {
			out.Procs = append(out.Procs, p)
			out.ByPID[p.PID] = p
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
