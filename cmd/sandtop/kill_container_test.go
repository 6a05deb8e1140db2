package main

import (
	"strings"
	"testing"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
)

// TestKillPodContainer: a Kubernetes pod (its shim, the pause container
// and two app containers, each in its cri-containerd-<id>.scope under the
// pod's slice) on real processes and cgroups: `kill <container id>` takes
// that container alone and says the pod stays; `kill <pod UID>` then takes
// the rest, shim included.
func TestKillPodContainer(t *testing.T) {
	s := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{{Name: "pod", Runtime: fleet.Kubernetes}}}).Manifest().Sandbox("pod")
	if len(s.AltIDs) != 3 {
		t.Fatalf("pod IDs %v, want the sandbox's and two containers'", s.AltIDs)
	}
	byRole := map[string]fleet.Process{}
	for _, p := range s.Processes {
		byRole[p.Role] = p
	}
	app := s.AltIDs[1]
	code, out, errOut := sandtop(t, "kill", "--force", "--grace", "1s", app[:16])
	if code != 0 || !strings.Contains(out, "which stays") {
		t.Fatalf("kill %s: exit %d\n%s%s", app[:16], code, out, errOut)
	}
	if alive(byRole["app"].Identity) {
		t.Errorf("the app container's process %d lives", byRole["app"].PID)
	}
	for _, r := range []string{"shim", "pause", "sidecar"} {
		if !alive(byRole[r].Identity) {
			t.Errorf("killing one container took the %s (%d) too", r, byRole[r].PID)
		}
	}
	if code, out, errOut := sandtop(t, "kill", "--force", "--grace", "1s", s.ID); code != 0 {
		t.Fatalf("kill %s: exit %d\n%s%s", s.ID, code, out, errOut)
	}
	for _, r := range []string{"shim", "pause", "sidecar"} {
		if alive(byRole[r].Identity) {
			t.Errorf("the pod's %s (%d) lives after kill of the pod", r, byRole[r].PID)
		}
	}
}
