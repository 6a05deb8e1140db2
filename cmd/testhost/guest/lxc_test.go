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
)

// lxcConfig replaces Debian's /etc/lxc/default.conf for the checks'
// containers: that one puts a veth on lxcbr0, which only lxc-net.service
// makes, and without it lxc-start aborts the container ("Received
// container state ABORTING instead of RUNNING"). An empty network is a
// network namespace with loopback alone.
const lxcConfig = "lxc.net.0.type = empty\n"

// TestLXC: Debian's LXC 5.0, a busybox container (lxc-create -t busybox),
// running and frozen (lxc-freeze): one lxc sandbox named by the container
// name, cgroups /lxc.payload.<name> (the container) and /lxc.monitor.<name>
// (lxc-start's monitor, the supervisor); `kill <name>` halts the init
// with SIGPWR and lxc-info says STOPPED, and stays so.
func TestLXC(t *testing.T) {
	inLane(t, &otherLane)
	for _, frozen := range []bool{false, true} {
		name := "st-lxc-running"
		if frozen {
			name = "st-lxc-frozen"
		}
		t.Run(strings.TrimPrefix(name, "st-lxc-"), func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "lxc.conf")
			if err := os.WriteFile(conf, []byte(lxcConfig), 0o644); err != nil {
				t.Fatal(err)
			}
			sh(t, "lxc-create", "-n", name, "-f", conf, "-t", "busybox")
			t.Cleanup(func() { try("lxc-stop", "-k", "-n", name); try("lxc-destroy", "-f", "-n", name) })
			logFile := filepath.Join(t.TempDir(), "lxc.log")
			if out, err := try("lxc-start", "-n", name, "-l", "DEBUG", "-o", logFile); err != nil {
				tail, _ := try("tail", "-n", "40", logFile)
				t.Fatalf("lxc-start: %v\n%s\nits log:\n%s", err, out, tail)
			}
			// The guest boots with apparmor=0: what LXC made of that.
			if aa, _ := try("grep", "-i", "apparmor", logFile); aa != "" {
				t.Logf("lxc-start's log on AppArmor:\n%s", aa)
			}
			if frozen {
				sh(t, "lxc-freeze", "-n", name)
			}
			pid, _ := strconv.Atoi(sh(t, "lxc-info", "-n", name, "-p", "-H"))
			if pid == 0 {
				t.Fatalf("lxc-info: no pid for %s", name)
			}
			d := list(t)
			s := d.find(name)
			check(t, "found", func(t *testing.T) error {
				if s == nil {
					return fmt.Errorf("no sandbox %s; its init %d (%s) is in %v", name, pid, cgroupOf(t, pid), d.holding(pid))
				}
				return want(s.Runtime == "lxc" && s.has(pid) && s.SupervisorPID != 0 && !badge(s, "orphan"), s,
					"want runtime lxc, the init %d, lxc-start as supervisor", pid)
			})
			if s == nil {
				s = &sandbox{}
			}
			check(t, "cgroup", func(t *testing.T) error {
				return want(s.Cgroup == "/lxc.payload."+name, s, "cgroup %q, want /lxc.payload.%s", s.Cgroup, name)
			})
			check(t, "badges", func(t *testing.T) error {
				return want(badge(s, "paused") == frozen, s, "badges %v, frozen %v", s.Badges, frozen)
			})
			check(t, "kill", func(t *testing.T) error {
				// The default grace, longer than busybox's init takes to
				// reboot on SIGTERM: a SIGTERM to the init would bring the
				// container back rather than be overtaken by SIGKILL.
				out, err := try("sandtop", "kill", "--force", name)
				if err != nil {
					return fmt.Errorf("sandtop kill %s: %v\n%s", name, err, out)
				}
				if !strings.Contains(out, "SIGPWR") {
					return fmt.Errorf("the init was not halted with SIGPWR:\n%s", out)
				}
				if !waitGone(pid) {
					return fmt.Errorf("init %d still alive", pid)
				}
				return by.check(t)
			})
			check(t, "runtime-view", func(t *testing.T) error {
				st := ""
				if eventually(func() bool { st, _ = try("lxc-info", "-n", name, "-s", "-H"); return st == "STOPPED" }) {
					// A rebooted container is started again by its monitor
					// once the old init is gone: still stopped a while on.
					time.Sleep(3 * time.Second)
					if st, _ = try("lxc-info", "-n", name, "-s", "-H"); st == "STOPPED" {
						return nil
					}
				}
				// What lxc-start's monitor, which sets the state, was doing.
				info, _ := try("lxc-info", "-n", name)
				events, _ := try("sh", "-c", "grep -H . /sys/fs/cgroup/lxc.monitor."+name+"/cgroup.events /sys/fs/cgroup/lxc.payload."+name+"/cgroup.events")
				monitor, _ := try("sh", "-c", "ps -o pid,stat,wchan:30,args -C lxc-start")
				return fmt.Errorf("lxc-info says %s after the kill\n%s\n%s\n%s", st, info, events, monitor)
			})
		})
	}
}
