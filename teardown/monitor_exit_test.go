package teardown

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
)

// podman's conmon outlives its container by the time it takes to record
// the exit (the exit file podman reads, then podman's cleanup). A slow
// host can keep it blocked, idle, for longer than a containerd shim is
// given before it is taken to be waiting to be told. Killed then, podman
// is left believing the container is still paused and refuses to remove
// it. The teardown must let it finish, and say so.
func TestTeardownLetsConmonRecordTheExit(t *testing.T) {
	const blocked = 3 * monitorIdle
	// conmon then runs podman's cleanup and waits for it: slower than a
	// monitor is given while idle, and still let finish.
	const cleanup = monitorExitWait + time.Second
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "podman", Runtime: fleet.Podman, ConmonExit: blocked},
		{Name: "paused", Runtime: fleet.Podman, ConmonExit: blocked, Pause: fleet.PauseFreeze},
		{Name: "cleaning", Runtime: fleet.Podman, ConmonExit: blocked, ConmonCleanup: cleanup},
	}})
	for _, name := range []string{"podman", "paused", "cleaning"} {
		t.Run(name, func(t *testing.T) {
			m := f.Manifest()
			sb := m.Sandbox(name)
			exitFile := filepath.Join(m.Base, "run/libpod/exits", sb.ID)
			r := tearDown(t, f, name, 0)
			if r.plan.CgroupDir == "" {
				t.Skip("no dedicated cgroup v2 here: conmon is killed with its container, one by one")
			}
			if b, err := os.ReadFile(exitFile); err != nil || string(b) != "137" {
				t.Errorf("conmon's exit file: %q, %v; conmon was killed before it recorded the exit", b, err)
			}
			if !r.has(StepWait, OK, "exited by itself") {
				t.Error("the teardown does not say that conmon exited by itself")
			}
			took := blocked
			if name == "cleaning" {
				took += cleanup
				if !r.has(StepWait, Skip, "finish the runtime's cleanup") {
					t.Error("the teardown does not say that it waits for the runtime's cleanup")
				}
			}
			if r.elapsed < took {
				t.Errorf("teardown took %s, less than conmon took to exit (%s)", r.elapsed, took)
			}
			if r.elapsed > took+5*time.Second {
				t.Errorf("teardown took %s", r.elapsed)
			}
		})
	}
}
