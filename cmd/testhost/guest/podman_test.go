//go:build testhost

package guest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc/proctest"
)

// podmanImage imports a busybox root file system as the image "bb".
func podmanImage(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	proctest.BusyboxRoot(t, filepath.Join(dir, "rootfs"))
	tarball := filepath.Join(dir, "bb.tar")
	sh(t, "tar", "-C", filepath.Join(dir, "rootfs"), "-cf", tarball, ".")
	sh(t, "podman", "import", "-q", tarball, "bb")
}

// podmanChecks checks sandtop's view of the podman container id (its init
// pid): runtime podman, the init and conmon members, the badges, and as
// dedicated cgroup the container's libpod-<id>.scope under parent, or the
// scope's leaf crun puts the container's processes in (<scope>/container):
// both are the container's alone.
func podmanChecks(t *testing.T, id string, pid int, parent string, paused bool) {
	s := mustFind(t, list(t), id, pid)
	check(t, "runtime", func(t *testing.T) error {
		return want(s.Runtime == "podman", s, "runtime %q, want podman", s.Runtime)
	})
	check(t, "members", func(t *testing.T) error {
		return want(s.has(pid) && s.hasComm("conmon"), s, "want the container's init %d and conmon", pid)
	})
	check(t, "cgroup", func(t *testing.T) error {
		initCg := cgroupOf(t, pid)
		scope := strings.TrimSuffix(initCg, "/container")
		if !strings.HasPrefix(scope, parent) || !strings.HasSuffix(scope, "/libpod-"+id+".scope") {
			return fmt.Errorf("the container's init is in %s: not a libpod-<id>.scope under %s", initCg, parent)
		}
		return want(s.Cgroup == scope || s.Cgroup == initCg, s, "cgroup %q, want %q or its leaf %q", s.Cgroup, scope, initCg)
	})
	check(t, "badges", func(t *testing.T) error {
		return want(!badge(s, "orphan") && badge(s, "paused") == paused, s, "badges %v", s.Badges)
	})
}

// TestPodman: rootful podman with the systemd cgroup manager, started from
// a login shell (conmon in libpod-conmon-<id>.scope) and from a systemd
// service (conmon in the service's cgroup), with runc and with crun, and
// paused: one sandbox named by the 64-hex ID with its conmon, the cgroup
// machine.slice/libpod-<id>.scope; `kill --reconcile` lets conmon record
// the exit and leaves podman agreeing that the container is gone.
func TestPodman(t *testing.T) {
	inLane(t, &otherLane)
	podmanImage(t)
	type start struct{ from, runtime string }
	for _, st := range []start{{"login", "runc"}, {"service", "runc"}, {"login", "crun"}, {"paused", "runc"}} {
		t.Run(st.from+"-"+st.runtime, func(t *testing.T) {
			run := "podman run -d --network none --runtime " + st.runtime +
				" --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 bb sleep 100000"
			var id string
			switch st.from {
			case "service":
				unit := "podman-" + st.runtime
				id = serviceRun(t, unit, run)
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
			podmanChecks(t, id, pid, "/machine.slice/", st.from == "paused")
			check(t, "kill", func(t *testing.T) error {
				out, err := kill(id[:12], "--reconcile")
				if err != nil {
					return err
				}
				if !waitGone(pid) {
					return fmt.Errorf("container init %d still alive", pid)
				}
				// conmon records the exit for podman and exits by itself
				// once the container is gone; killed before that, podman
				// keeps a paused container paused.
				if !strings.Contains(out, "exited by itself") {
					return fmt.Errorf("conmon did not exit by itself after its container:\n%s", out)
				}
				return by.check(t)
			})
			check(t, "runtime-view", func(t *testing.T) error {
				out, _ := try("podman", "ps", "-a", "--filter", "id="+id, "--format", "{{.Status}}")
				if strings.HasPrefix(out, "Up") || strings.HasPrefix(out, "Paused") {
					return fmt.Errorf("podman ps after kill --reconcile: %q", out)
				}
				return nil
			})
		})
	}
}
