package model

import (
	"strings"
	"testing"
)

// gVisor as a Docker runtime: Docker's shim runs runsc, whose sandbox and
// gofer (argv[0] rewritten, the container ID on their argv) are the
// shim's children in the container's docker-<id>.scope, as the Debian 12
// test host showed. One container, one docker sandbox, no gvisor one and
// no orphan.
func TestGVisorUnderDockerIsOneSandbox(t *testing.T) {
	id := strings.Repeat("9f", 32)
	scope := cgroup("/system.slice/docker-" + id + ".scope")
	bundle := "/run/containerd/io.containerd.runtime.v2.task/moby/" + id
	s := snap(
		pr(700, 1, "/usr/bin/containerd-shim-runc-v2 -namespace moby -id "+id+" -address /run/containerd/containerd.sock", cgroup("/system.slice/containerd.service")),
		pr(710, 700, "runsc-gofer --root=/var/run/docker/runtime-runc/moby --platform=ptrace gofer --bundle "+bundle+" --spec-fd=3", scope),
		pr(711, 700, "runsc-sandbox --root=/var/run/docker/runtime-runc/moby --platform=ptrace boot --bundle="+bundle+" --controller-fd=3 "+id, scope),
		pr(712, 711, "runsc-sandbox --root=/var/run/docker/runtime-runc/moby --platform=ptrace boot --bundle="+bundle+" --controller-fd=3 "+id, scope),
	)
	s.Listeners["/run/containerd/containerd.sock"] = true
	v := Build(s, Presets(), nil)
	if len(v.Sandboxes) != 1 {
		var got []string
		for _, sb := range v.Sandboxes {
			got = append(got, sb.Key())
		}
		t.Fatalf("sandboxes %v, want docker's alone", got)
	}
	sb := v.Sandboxes[0]
	wantPIDs(t, sb, 700, 710, 711, 712)
	if sb.Runtime != "docker" || sb.ID != id || sb.Cgroup != "/system.slice/docker-"+id+".scope" || sb.Orphan {
		t.Errorf("runtime %s id %s cgroup %s orphan %v", sb.Runtime, sb.ID, sb.Cgroup, sb.Orphan)
	}
	if got, err := v.Resolve(id[:12]); err != nil || got != sb {
		t.Errorf("the short ID: %v", err)
	}
}
