//go:build testhost

package guest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc/proctest"
)

// bundle writes an OCI bundle (runc spec, a busybox root, `sleep`, no
// terminal) and returns its directory.
func bundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	proctest.BusyboxRoot(t, filepath.Join(dir, "rootfs"))
	sh(t, "runc", "spec", "--bundle", dir)
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	p := spec["process"].(map[string]any)
	p["terminal"] = false
	p["args"] = []string{"sleep", "100000"}
	data, _ = json.Marshal(spec)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRunc: standalone `runc run -d` from a systemd service and from a
// login shell: the container's cgroup lands under the caller's slice
// (/system.slice/<id>, /user.slice/user-0.slice/<id>); one runc sandbox
// named by the container ID; `kill --reconcile` and runc forgets it.
func TestRunc(t *testing.T) {
	inLane(t, &otherLane)
	for _, from := range []string{"service", "login"} {
		t.Run(from, func(t *testing.T) {
			id := "st-runc-" + from
			b := bundle(t)
			run := "runc run -d --bundle " + b + " " + id + " </dev/null >/dev/null 2>&1"
			if from == "service" {
				serviceRun(t, id, run)
			} else {
				sh(t, "su", "-l", "-c", run)
			}
			t.Cleanup(func() { try("runc", "delete", "--force", id) })
			var state struct {
				Pid int `json:"pid"`
			}
			if err := json.Unmarshal([]byte(sh(t, "runc", "state", id)), &state); err != nil || state.Pid == 0 {
				t.Fatalf("runc state %s: %v", id, err)
			}
			pid := state.Pid
			cg := cgroupOf(t, pid)
			t.Logf("runc container %s from a %s: cgroup %s", id, from, cg)
			d := list(t)
			s := d.find(id)
			check(t, "found", func(t *testing.T) error {
				if s == nil {
					return fmt.Errorf("no sandbox %s; its init %d (cgroup %s) is in %v", id, pid, cg, d.holding(pid))
				}
				return want(s.Runtime == "runc" && s.has(pid), s, "want runtime runc with the init %d", pid)
			})
			if s == nil {
				s = &sandbox{}
			}
			check(t, "cgroup", func(t *testing.T) error {
				return want(s.Cgroup == cg && strings.HasSuffix(cg, "/"+id), s, "cgroup %q, want %q", s.Cgroup, cg)
			})
			check(t, "kill", func(t *testing.T) error {
				if _, err := kill(id, "--reconcile"); err != nil {
					return err
				}
				if !waitGone(pid) {
					return fmt.Errorf("init %d still alive", pid)
				}
				return by.check(t)
			})
			check(t, "runtime-view", func(t *testing.T) error {
				if out, err := try("runc", "state", id); err == nil {
					return fmt.Errorf("runc still has %s: %s", id, out)
				}
				return nil
			})
		})
	}
}
