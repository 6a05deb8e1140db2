package model

import (
	"reflect"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
)

const podmanID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// podmanBesideConmon is the view of a podman container: its worker in its
// dedicated cgroup (returned), conmon beside it.
func podmanBesideConmon() (v *View, cgroup string, conmon, worker *proc.Process) {
	cgroup = "/libpod_parent/libpod-" + podmanID
	conmon = modeltest.Proc(50, 1, "/usr/bin/conmon --api-version 1 -c "+podmanID+" -u "+podmanID, modeltest.Cgroup("/libpod_parent/conmon"))
	worker = modeltest.Proc(60, 50, "/bin/worker", modeltest.Cgroup(cgroup))
	snap := modeltest.Snapshot(proc.Snapshot{Time: time.Unix(1_800_000_000, 0), ClockTicks: 100}, conmon, worker)
	return Build(snap, Effective(nil, true), nil), cgroup, conmon, worker
}

// TestSettledCgroups: a sandbox's dedicated cgroup is settled only when a
// front end says what it shows and shows nothing of the sandbox's
// processes: off screen, collapsed, not in the detail pane.
func TestSettledCgroups(t *testing.T) {
	v, cgroup, _, _ := podmanBesideConmon()
	sb := v.Sandbox("podman:" + podmanID)
	if sb == nil || sb.Cgroup != cgroup {
		t.Fatalf("no podman sandbox with the dedicated cgroup %s: %+v", cgroup, sb)
	}
	key := map[string]bool{sb.Key(): true}
	for _, tc := range []struct {
		name string
		n    ResourceNeeds
		want bool
	}{
		{"every sandbox shown", ResourceNeeds{}, false},
		{"on screen", ResourceNeeds{Shown: key}, false},
		{"off screen", ResourceNeeds{Shown: map[string]bool{}}, true},
		{"off screen, expanded", ResourceNeeds{Shown: map[string]bool{}, Open: key}, false},
		{"off screen, in the detail pane", ResourceNeeds{Shown: map[string]bool{}, Full: key}, false},
	} {
		got := SettledCgroups(v, tc.n, nil)
		if got[cgroup] != tc.want || len(got) > 1 || got["/libpod_parent/conmon"] {
			t.Errorf("%s: settled %v, want %s settled: %v", tc.name, got, cgroup, tc.want)
		}
		if again := SettledCgroups(v, tc.n, got); got != nil && reflect.ValueOf(again).Pointer() != reflect.ValueOf(got).Pointer() {
			t.Errorf("%s: the same answer twice is a new map", tc.name)
		}
	}
	if got := SettledCgroups(v, ResourceNeeds{Shown: key}, map[string]bool{cgroup: true}); got[cgroup] {
		t.Errorf("on screen after off screen: settled %v", got)
	}
}

// TestSettledAside: of a settled sandbox, the members outside its settled
// cgroup (conmon beside the container) are aside, its cgroup's are not;
// nothing is while CPU orders the rows, or when nothing is settled.
func TestSettledAside(t *testing.T) {
	v, _, conmon, worker := podmanBesideConmon()
	offScreen := ResourceNeeds{Shown: map[string]bool{}}
	settled := SettledCgroups(v, offScreen, nil)
	got := SettledAside(v, settled, offScreen, nil)
	if !got[conmon.ID()] || got[worker.ID()] || len(got) != 1 {
		t.Fatalf("aside %v, want conmon (%v) alone", got, conmon.ID())
	}
	if again := SettledAside(v, settled, offScreen, got); reflect.ValueOf(again).Pointer() != reflect.ValueOf(got).Pointer() {
		t.Error("the same answer twice is a new map")
	}
	if got := SettledAside(v, settled, ResourceNeeds{Shown: map[string]bool{}, CPUOrder: true}, nil); got != nil {
		t.Errorf("in order of CPU: aside %v", got)
	}
	if got := SettledAside(v, nil, offScreen, nil); got != nil {
		t.Errorf("nothing settled: aside %v", got)
	}
}
