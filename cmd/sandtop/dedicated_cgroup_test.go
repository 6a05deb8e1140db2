package main

import (
	"path"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
)

// TestPodmanConmonScopeCgroup: podman with the systemd manager from a login
// shell, laid out on real cgroups (conmon in machine.slice/
// libpod-conmon-<id>.scope, the container in machine.slice/libpod-<id>.scope/
// container, as crun leaves it), two containers in one machine.slice. Each
// sandbox's dedicated cgroup is its container's scope (above crun's
// container sub-cgroup), never machine.slice
// (a cgroup.kill there takes every machine); the plan says so, and a kill of
// one container leaves the other machine alive.
func TestPodmanConmonScopeCgroup(t *testing.T) {
	m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "web", Runtime: fleet.Podman, SystemdCgroups: true},
		{Name: "db", Runtime: fleet.Podman, SystemdCgroups: true},
	}}).Manifest()
	web, db := m.Sandbox("web"), m.Sandbox("db")
	doc := listJSON(t)
	for _, s := range []*fleet.Sandbox{web, db} {
		got := find(doc, s.ID)
		if got == nil {
			t.Fatalf("no sandbox %s", s.ID)
		}
		// The container's scope, above crun's container sub-cgroup.
		if want := path.Dir(s.Cgroup); got.Runtime != "podman" || got.Cgroup != want || !strings.HasSuffix(want, "/machine.slice/libpod-"+s.ID+".scope") {
			t.Errorf("%s: runtime %q cgroup %q, want podman in %s", s.Name, got.Runtime, got.Cgroup, want)
		}
	}
	code, out, errOut := sandtop(t, "kill", "--dry-run", web.ID[:16])
	if code != 0 || !strings.Contains(out, "libpod-"+web.ID+".scope (dedicated: cgroup.kill)") {
		t.Fatalf("kill --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("kill --dry-run:\n%s", out)
	if code, out, errOut := sandtop(t, "kill", "--force", "--grace", "1s", web.ID[:16]); code != 0 {
		t.Fatalf("kill: exit %d\n%s%s", code, out, errOut)
	}
	for _, p := range web.Processes {
		if alive(p.Identity) {
			t.Errorf("web's %s (%d) lives", p.Role, p.PID)
		}
	}
	for _, p := range db.Processes {
		if !alive(p.Identity) && p.Role != fleet.RoleZombie {
			t.Errorf("killing web took db's %s (%d)", p.Role, p.PID)
		}
	}
}
