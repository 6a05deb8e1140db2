//go:build testhost

package guest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sandtop/sandtop/proc/proctest"
)

// dockerImage imports a busybox root file system as the image "bb" (the
// guest has no network to pull from) once dockerd runs.
func dockerImage(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	proctest.BusyboxRoot(t, filepath.Join(dir, "rootfs"))
	tar := exec.Command("tar", "-C", filepath.Join(dir, "rootfs"), "-c", ".")
	imp := exec.Command("docker", "import", "-", "bb")
	pipe, err := tar.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	imp.Stdin = pipe
	if err := tar.Start(); err != nil {
		t.Fatal(err)
	}
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
	tar.Wait()
}

// dockerRun starts a detached busybox container and returns its full ID and
// its init's pid.
func dockerRun(t *testing.T, args ...string) (string, int) {
	t.Helper()
	run := append([]string{"run", "-d", "--network", "none"}, args...)
	id := sh(t, "docker", append(run, "bb", "sleep", "100000")...)
	t.Cleanup(func() { try("docker", "rm", "-f", id) })
	pid, err := strconv.Atoi(sh(t, "docker", "inspect", "-f", "{{.State.Pid}}", id))
	if err != nil || pid == 0 {
		t.Fatalf("docker inspect %s: pid %d %v", id, pid, err)
	}
	return id, pid
}

// dockerExited returns an error unless Docker comes to say that the
// container id exited.
func dockerExited(id string) error {
	state := ""
	if eventually(func() bool {
		state, _ = try("docker", "inspect", "-f", "{{.State.Status}}", id)
		return state == "exited"
	}) {
		return nil
	}
	tasks, _ := try("ctr", "-n", "moby", "task", "ls")
	journal, _ := try("journalctl", "--no-pager", "-n", "15", "-u", "containerd.service", "-u", "docker.service")
	return fmt.Errorf("docker says %q after the kill, want exited; containerd's tasks:\n%s\nthe daemons' last words:\n%s", state, tasks, journal)
}

// TestDocker: Docker with the systemd cgroup driver, a container running and
// one paused, each a sandbox named by its 64-hex ID, shim included, its
// cgroup system.slice/docker-<id>.scope; a kill takes the container and
// Docker sees it exited; an orphan once containerd is SIGKILLed, not after
// its restart.
func TestDocker(t *testing.T) {
	inLane(t, &containerdLane)
	startUnits(t, "containerd.service", "docker.service")
	dockerImage(t)

	for _, paused := range []bool{false, true} {
		name := "running"
		if paused {
			name = "paused"
		}
		t.Run(name, func(t *testing.T) {
			id, pid := dockerRun(t)
			if paused {
				sh(t, "docker", "pause", id)
			}
			s := mustFind(t, list(t), id, pid)
			check(t, "runtime", func(t *testing.T) error {
				return want(s.Runtime == "docker", s, "runtime %q, want docker", s.Runtime)
			})
			check(t, "members", func(t *testing.T) error {
				return want(s.has(pid) && s.hasComm("containerd-shim"), s, "want the container's init %d and its shim", pid)
			})
			check(t, "cgroup", func(t *testing.T) error {
				cg := "/system.slice/docker-" + id + ".scope"
				return want(s.Cgroup == cg && cgroupOf(t, pid) == cg, s, "cgroup %q (init in %q), want %q", s.Cgroup, cgroupOf(t, pid), cg)
			})
			check(t, "badges", func(t *testing.T) error {
				return want(!badge(s, "orphan") && badge(s, "paused") == paused, s, "badges %v (paused %v)", s.Badges, paused)
			})
			check(t, "kill", func(t *testing.T) error {
				out, err := kill(id[:12])
				if err != nil {
					return err
				}
				t.Logf("sandtop kill:\n%s", out)
				if !waitGone(pid) {
					return fmt.Errorf("container init %d still alive", pid)
				}
				return by.check(t)
			})
			check(t, "runtime-view", func(t *testing.T) error { return dockerExited(id) })
		})
	}

	t.Run("orphan", func(t *testing.T) {
		id, pid := dockerRun(t)
		// containerd.service restarts itself (Restart=always), which would
		// end the orphan's time before sandtop looks; only its main process
		// dies, the shims in its cgroup live on.
		dropIn := "/run/systemd/system/containerd.service.d"
		if err := os.MkdirAll(dropIn, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dropIn+"/no-restart.conf", []byte("[Service]\nRestart=no\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		sh(t, "systemctl", "daemon-reload")
		defer func() {
			os.RemoveAll(dropIn)
			try("systemctl", "daemon-reload")
			try("systemctl", "start", "containerd.service")
		}()
		sh(t, "systemctl", "kill", "--kill-who=main", "-s", "KILL", "containerd.service")
		eventually(func() bool { st, _ := try("systemctl", "is-active", "containerd.service"); return st != "active" })
		check(t, "containerd-killed", func(t *testing.T) error {
			s := mustFind(t, list(t), id, pid)
			return want(badge(s, "orphan"), s, "containerd SIGKILLed: want the badge orphan")
		})
		check(t, "containerd-restarted", func(t *testing.T) error {
			startUnits(t, "containerd.service")
			var s *sandbox
			if eventually(func() bool { s = mustFind(t, list(t), id, pid); return !badge(s, "orphan") }) {
				return nil
			}
			return want(false, s, "containerd restarted: want no orphan badge")
		})
		check(t, "bystanders", func(t *testing.T) error { return by.check(t) })
	})
}
