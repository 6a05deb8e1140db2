//go:build testhost

package guest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/sandtop/sandtop/proc/proctest"
)

// TestNspawn: systemd-nspawn registered with machined, started directly
// (machine.slice/machine-<name>.scope, with payload and supervisor) and
// through `machinectl start` (systemd-nspawn@<name>.service): one sandbox
// each, named by the machine name, the nspawn process and its payload in
// it; `kill <name>` ends the machine and machined forgets it.
func TestNspawn(t *testing.T) {
	inLane(t, &otherLane)
	t.Run("direct", func(t *testing.T) {
		name := "st-direct"
		dir := filepath.Join(t.TempDir(), name)
		proctest.BusyboxRoot(t, dir)
		cmd := exec.Command("systemd-nspawn", "--quiet", "--console=pipe", "-D", dir, "-M", name, "/bin/sleep", "100000")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("systemd-nspawn: %v", err)
		}
		t.Cleanup(func() { try("machinectl", "terminate", name); cmd.Process.Kill(); cmd.Wait() })
		leader := machineLeader(t, name)
		// machined names the scope after the machine, escaped as a unit
		// name ("-" is \x2d).
		scope := "/machine.slice/machine-" + sh(t, "systemd-escape", name) + ".scope"
		nspawnChecks(t, name, leader, scope)
	})
	t.Run("machinectl", func(t *testing.T) {
		name := "st-machinectl"
		dir := "/var/lib/machines/" + name
		proctest.BusyboxRoot(t, dir)
		t.Cleanup(func() { os.RemoveAll(dir) })
		// machinectl start runs systemd-nspawn@.service (--boot, a veth,
		// user namespacing); the settings file overrides those the busybox
		// tree cannot boot with.
		settings := "[Exec]\nBoot=no\nParameters=/bin/sleep 100000\nPrivateUsers=no\n[Network]\nVirtualEthernet=no\nPrivate=no\n"
		if err := os.MkdirAll("/etc/systemd/nspawn", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("/etc/systemd/nspawn/"+name+".nspawn", []byte(settings), 0o644); err != nil {
			t.Fatal(err)
		}
		sh(t, "machinectl", "start", name)
		t.Cleanup(func() { try("machinectl", "terminate", name) })
		leader := machineLeader(t, name)
		nspawnChecks(t, name, leader, "/machine.slice/systemd-nspawn@"+name+".service")
	})
}

// machineLeader waits for machined to know the machine and returns its
// leader (the payload's init).
func machineLeader(t *testing.T, name string) int {
	t.Helper()
	pid := 0
	if !eventually(func() bool {
		out, _ := try("machinectl", "show", "-p", "Leader", "--value", name)
		pid, _ = strconv.Atoi(out)
		return pid > 0
	}) {
		t.Fatalf("machined never listed %s", name)
	}
	return pid
}

func nspawnChecks(t *testing.T, name string, leader int, unit string) {
	d := list(t)
	s := d.find(name)
	check(t, "one-sandbox", func(t *testing.T) error {
		if s == nil {
			return fmt.Errorf("no sandbox %s; the payload %d is in %v", name, leader, d.holding(leader))
		}
		if in := d.holding(leader); len(in) != 1 {
			return fmt.Errorf("the payload %d is in %v", leader, in)
		}
		return want(s.has(leader) && s.hasComm("systemd-nspawn"), s, "want the payload %d and systemd-nspawn", leader)
	})
	if s == nil {
		s = &sandbox{}
	}
	check(t, "cgroup", func(t *testing.T) error {
		return want(s.Cgroup == unit || s.Cgroup == unit+"/payload", s, "cgroup %q, want %s", s.Cgroup, unit)
	})
	check(t, "kill", func(t *testing.T) error {
		if _, err := kill(name); err != nil {
			return err
		}
		if !waitGone(leader) {
			return fmt.Errorf("payload %d still alive", leader)
		}
		return by.check(t)
	})
	check(t, "runtime-view", func(t *testing.T) error {
		if eventually(func() bool { _, err := try("machinectl", "show", name); return err != nil }) {
			return nil
		}
		return fmt.Errorf("machined still lists %s", name)
	})
}
