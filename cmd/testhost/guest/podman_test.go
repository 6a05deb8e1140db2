//go:build testhost

package guest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// podmanImage imports a busybox root file system as the image "bb".
func podmanImage(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	rootfs(t, filepath.Join(dir, "rootfs"))
	tarball := filepath.Join(dir, "bb.tar")
	sh(t, "tar", "-C", filepath.Join(dir, "rootfs"), "-cf", tarball, ".")
	sh(t, "podman", "import", "-q", tarball, "bb")
}

// TestPodman: rootful podman with the systemd cgroup manager, started from
// a login shell (conmon in libpod-conmon-<id>.scope) and from a systemd
// service (conmon in the service's cgroup), with runc and with crun, and
// paused: one sandbox named by the 64-hex ID with its conmon, the cgroup
// machine.slice/libpod-<id>.scope; `kill --reconcile` leaves podman
// agreeing that the container is gone.
func TestPodman(t *testing.T) {
	podmanImage(t)
	by := startBystanders(t, "podman")
	type start struct{ from, runtime string }
	for _, st := range []start{{"login", "runc"}, {"service", "runc"}, {"login", "crun"}, {"paused", "runc"}} {
		t.Run(st.from+"-"+st.runtime, func(t *testing.T) {
			run := "podman run -d --network none --runtime " + st.runtime +
				" --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 bb sleep 100000"
			var id string
			switch st.from {
			case "service":
				unit := "podman-" + st.runtime
				sh(t, "systemd-run", "--unit", unit, "--quiet", "--wait", "-p", "Type=oneshot", "-p", "RemainAfterExit=yes",
					"-p", "StandardOutput=file:/run/"+unit+".id", "sh", "-c", run)
				t.Cleanup(func() { try("systemctl", "stop", unit) })
				id = strings.TrimSpace(sh(t, "cat", "/run/"+unit+".id"))
			default:
				id = sh(t, "su", "-l", "-c", run)
			}
			t.Cleanup(func() { try("podman", "rm", "-f", id) })
			if st.from == "paused" {
				sh(t, "podman", "pause", id)
			}
			pid, err := strconv.Atoi(sh(t, "podman", "inspect", "-f", "{{.State.Pid}}", id))
			if err != nil || len(id) != 64 {
				t.Fatalf("podman inspect %q: %v", id, err)
			}
			s := mustFind(t, list(t), id, pid)
			check(t, "runtime", "", func(t *testing.T) error {
				return want(s.Runtime == "podman", s, "runtime %q, want podman", s.Runtime)
			})
			check(t, "members", "", func(t *testing.T) error {
				return want(s.has(pid) && s.hasComm("conmon"), s, "want the container's init %d and conmon", pid)
			})
			check(t, "cgroup", "", func(t *testing.T) error {
				cg := "/machine.slice/libpod-" + id + ".scope"
				return want(s.Cgroup == cg, s, "cgroup %q (init in %q), want %q", s.Cgroup, cgroupOf(t, pid), cg)
			})
			check(t, "badges", "", func(t *testing.T) error {
				return want(!badge(s, "orphan") && badge(s, "paused") == (st.from == "paused"), s, "badges %v", s.Badges)
			})
			check(t, "kill", "", func(t *testing.T) error {
				kill(t, id[:12], "--reconcile")
				if !waitGone(pid, 5*time.Second) {
					return fmt.Errorf("container init %d still alive", pid)
				}
				return by.check(t)
			})
			check(t, "runtime-view", "", func(t *testing.T) error {
				out, _ := try("podman", "ps", "-a", "--filter", "id="+id, "--format", "{{.Status}}")
				if strings.HasPrefix(out, "Up") || strings.HasPrefix(out, "Paused") {
					return fmt.Errorf("podman ps after kill --reconcile: %q", out)
				}
				return nil
			})
		})
	}
}
