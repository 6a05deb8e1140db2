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
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "podman", Runtime: fleet.Podman, ConmonExit: blocked},
		{Name: "paused", Runtime: fleet.Podman, ConmonExit: blocked, Pause: fleet.PauseFreeze},
	}})
	for _, name := range []string{"podman", "paused"} {
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
			if r.elapsed < blocked {
				t.Errorf("teardown took %s, less than conmon was blocked (%s)", r.elapsed, blocked)
			}
			if r.elapsed > monitorExitWait+5*time.Second {
				t.Errorf("teardown took %s", r.elapsed)
			}
		})
	}
}
