//go:build testhost

package guest

import (
	"fmt"
	"strings"
	"testing"
)

// TestGVisor: gVisor (Debian's runsc, ptrace platform, no KVM needed) as a
// Docker runtime with the systemd cgroup driver: runsc-sandbox and
// runsc-gofer (argv[0] rewritten, comm exe) are children of the shim in
// docker-<id>.scope with the ptrace stubs: one docker sandbox with all of
// them; `kill <id>` and Docker says exited.
func TestGVisor(t *testing.T) {
	inLane(t, &containerdLane)
	startUnits(t, "containerd.service", "docker.service")
	if out, _ := try("docker", "images", "-q", "bb"); out == "" {
		dockerImage(t)
	}
	id, pid := dockerRun(t, "--runtime", "runsc")
	cg := "/system.slice/docker-" + id + ".scope"
	d := list(t)
	s := d.find(id)
	check(t, "one-sandbox", func(t *testing.T) error {
		if s == nil {
			return fmt.Errorf("no sandbox %s; runsc's pid %d is in %v", id, pid, d.holding(pid))
		}
		var argv0 []string
		for _, p := range s.Processes {
			argv0 = append(argv0, strings.Join(p.Argv[:min(1, len(p.Argv))], ""))
		}
		all := strings.Join(argv0, " ")
		if !strings.Contains(all, "runsc-sandbox") || !strings.Contains(all, "runsc-gofer") || !s.hasComm("containerd-shim") {
			return want(false, s, "want the shim, runsc-sandbox and runsc-gofer")
		}
		for _, other := range d.Sandboxes {
			if other.ID != id && strings.HasPrefix(other.ID, id[:12]) {
				return fmt.Errorf("the short ID %s is ambiguous: also %s:%s", id[:12], other.Runtime, other.ID)
			}
		}
		return want(s.Runtime == "docker" && s.Cgroup == cg && !badge(s, "orphan"), s, "want runtime docker, cgroup %s, no orphan", cg)
	})
	check(t, "kill", func(t *testing.T) error {
		if _, err := kill(id[:12]); err != nil {
			return err
		}
		if !waitGone(pid) {
			return fmt.Errorf("runsc pid %d still alive", pid)
		}
		return by.check(t)
	})
	check(t, "runtime-view", func(t *testing.T) error { return dockerExited(id) })
}
