//go:build testhost

package guest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

const knownLXC = "LXC was listed as lxc.payload.<name> with runtime runc, its monitor missed; the lxc preset is new, not yet seen passing on the real runtime"

// TestLXC: Debian's LXC 5.0, a busybox container (lxc-create -t busybox),
// running and frozen (lxc-freeze): one lxc sandbox named by the container
// name, cgroups /lxc.payload.<name> (the container) and /lxc.monitor.<name>
// (lxc-start's monitor, the supervisor); `kill <name>` and lxc-info says
// STOPPED.
func TestLXC(t *testing.T) {
	by := startBystanders(t, "lxc")
	for _, frozen := range []bool{false, true} {
		name := "st-lxc-running"
		if frozen {
			name = "st-lxc-frozen"
		}
		t.Run(strings.TrimPrefix(name, "st-lxc-"), func(t *testing.T) {
			sh(t, "lxc-create", "-n", name, "-t", "busybox")
			t.Cleanup(func() { try("lxc-stop", "-k", "-n", name); try("lxc-destroy", "-f", "-n", name) })
			sh(t, "lxc-start", "-n", name)
			if frozen {
				sh(t, "lxc-freeze", "-n", name)
			}
			pid, _ := strconv.Atoi(sh(t, "lxc-info", "-n", name, "-p", "-H"))
			if pid == 0 {
				t.Fatalf("lxc-info: no pid for %s", name)
			}
			d := list(t)
			s := d.find(name)
			check(t, "found", knownLXC, func(t *testing.T) error {
				if s == nil {
					return fmt.Errorf("no sandbox %s; its init %d (%s) is in %v", name, pid, cgroupOf(t, pid), d.holding(pid))
				}
				return want(s.Runtime == "lxc" && s.has(pid) && s.SupervisorPID != 0 && !badge(s, "orphan"), s,
					"want runtime lxc, the init %d, lxc-start as supervisor", pid)
			})
			if s == nil {
				s = &sandbox{}
			}
			check(t, "cgroup", knownLXC, func(t *testing.T) error {
				return want(s.Cgroup == "/lxc.payload."+name, s, "cgroup %q, want /lxc.payload.%s", s.Cgroup, name)
			})
			check(t, "badges", knownLXC, func(t *testing.T) error {
				return want(badge(s, "paused") == frozen, s, "badges %v, frozen %v", s.Badges, frozen)
			})
			check(t, "kill", knownLXC, func(t *testing.T) error {
				if out, err := try("sandtop", "kill", "--force", "--grace", "2s", name); err != nil {
					return fmt.Errorf("sandtop kill %s: %v\n%s", name, err, out)
				}
				if !waitGone(pid, 5*time.Second) {
					return fmt.Errorf("init %d still alive", pid)
				}
				return by.check(t)
			})
			check(t, "runtime-view", knownLXC, func(t *testing.T) error {
				for i := 0; i < 50; i++ {
					if st, _ := try("lxc-info", "-n", name, "-s", "-H"); st == "STOPPED" {
						return nil
					}
					time.Sleep(200 * time.Millisecond)
				}
				st, _ := try("lxc-info", "-n", name, "-s", "-H")
				return fmt.Errorf("lxc-info says %s after the kill", st)
			})
		})
	}
}
