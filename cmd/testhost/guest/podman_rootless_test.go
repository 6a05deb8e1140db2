//go:build testhost

package guest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/proc/proctest"
)

// rootless is the user whose podman runs rootless.
const rootless = "st"

// asRootless runs a shell command as the rootless user, through a login
// shell as the user would (pam_systemd gives it XDG_RUNTIME_DIR and the
// user's bus).
func asRootless(cmd string) (string, error) { return try("su", "-l", rootless, "-c", cmd) }

// rootlessUser makes the user (subordinate IDs for podman's user
// namespace) and starts its systemd instance for good (lingering: the
// containers outlive the login shell that started them), and returns its
// uid.
func rootlessUser(t *testing.T) int {
	t.Helper()
	if _, err := try("id", "-u", rootless); err != nil {
		sh(t, "useradd", "-m", "-s", "/bin/sh", rootless)
	}
	uid, err := strconv.Atoi(sh(t, "id", "-u", rootless))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		data, _ := os.ReadFile(f)
		if !strings.Contains("\n"+string(data), "\n"+rootless+":") {
			if err := os.WriteFile(f, append(data, rootless+":100000:65536\n"...), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	sh(t, "loginctl", "enable-linger", rootless)
	bus := fmt.Sprintf("/run/user/%d/bus", uid)
	for i := 0; i < 600; i++ {
		if _, err := os.Stat(bus); err == nil {
			return uid
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("user@%d.service: no %s after 60 s", uid, bus)
	return 0
}

// TestPodmanRootless: podman run by a user (rootless, its default OCI
// runtime, the systemd cgroup manager through the user's systemd): one
// podman sandbox with conmon, its cgroup the container's
// libpod-<id>.scope in user@<uid>.service; `kill --reconcile` by root runs
// podman as the container's owner, so the user's podman still works
// afterwards and nothing in the user's storage belongs to root.
func TestPodmanRootless(t *testing.T) {
	inLane(t, &containerdLane)
	uid := rootlessUser(t)
	dir := t.TempDir()
	proctest.BusyboxRoot(t, filepath.Join(dir, "rootfs"))
	if out, err := try("sh", "-c", "tar -C "+filepath.Join(dir, "rootfs")+" -c . | su -l "+rootless+" -c 'podman import -q - bb'"); err != nil {
		t.Fatalf("podman import as %s: %v\n%s", rootless, err, out)
	}
	out, err := asRootless("podman run -d --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 bb sleep 100000")
	id := out[strings.LastIndexByte(out, '\n')+1:]
	if err != nil || len(id) != 64 {
		t.Fatalf("podman run as %s: %v\n%s", rootless, err, out)
	}
	t.Cleanup(func() { asRootless("podman rm -f " + id) })
	out, err = asRootless("podman inspect -f '{{.State.Pid}}' " + id)
	pid, _ := strconv.Atoi(out)
	if err != nil || pid == 0 {
		t.Fatalf("podman inspect as %s: %v\n%s", rootless, err, out)
	}
	podmanChecks(t, id, pid, fmt.Sprintf("/user.slice/user-%d.slice/user@%d.service/", uid, uid), false)
	check(t, "kill", func(t *testing.T) error {
		out, err := kill(id[:12], "--reconcile")
		if err != nil {
			return err
		}
		// Whom the reconcile ran as, and what podman said.
		t.Logf("sandtop kill --reconcile:\n%s", out)
		if !waitGone(pid) {
			return fmt.Errorf("container init %d still alive", pid)
		}
		return by.check(t)
	})
	check(t, "runtime-view", func(t *testing.T) error {
		out, err := asRootless("podman ps -a --filter id=" + id + " --format '{{.Status}}'")
		if err != nil {
			owners, _ := try("sh", "-c", "ls -lnd /home/"+rootless+"/.local/share/containers/storage /home/"+rootless+"/.local/share/containers/storage/*")
			return fmt.Errorf("the user's podman ps -a fails after kill --reconcile: %v: %s\nthe storage's owners:\n%s", err, out, owners)
		}
		if strings.HasPrefix(out, "Up") || strings.HasPrefix(out, "Paused") {
			return fmt.Errorf("podman ps after kill --reconcile: %q", out)
		}
		home := sh(t, "su", "-l", rootless, "-c", "echo $HOME")
		rootOwned, _ := try("find", filepath.Join(home, ".local/share/containers"), fmt.Sprintf("/run/user/%d", uid), "-uid", "0", "-print", "-quit")
		if rootOwned != "" {
			return fmt.Errorf("root owns %s in the user's storage after kill --reconcile", rootOwned)
		}
		return nil
	})
}
