package teardown

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc/proctest"
)

// A system init as pid 1 of a pid namespace, as LXC runs a container's:
// busybox's init reboots on SIGTERM, and an init that reboots in a pid
// namespace dies of SIGHUP, which LXC's monitor answers by starting the
// container again (after the kill said it was gone). LXC's rule names its
// halt signal, which the teardown sends the init instead: the parent, in
// the monitor's place, must see it die of SIGINT (halted) or SIGKILL. The
// same rule without its halt signal shows what SIGTERM does, so the check
// can fail.
func TestTeardownHaltsANamespaceInit(t *testing.T) {
	proctest.RequireRoot(t)
	lxc := presetRule(t, "lxc")
	if lxc.HaltSignal == 0 {
		t.Fatal("the lxc preset names no halt signal")
	}
	for _, c := range []struct {
		name string
		halt syscall.Signal
		want []syscall.Signal
	}{
		{"halt-signal", lxc.HaltSignal, []syscall.Signal{unix.SIGINT, unix.SIGKILL}},
		{"sigterm", 0, []syscall.Signal{unix.SIGHUP}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rule := *lxc
			rule.HaltSignal = c.halt
			rules := model.Rules{&rule}
			b := make([]byte, 6)
			_, _ = rand.Read(b)
			id := "sandtop-test-" + hex.EncodeToString(b)
			cg := filepath.Join(cgroupMount(t, ""), "lxc.payload."+id)
			mkdirs(t, cg)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = Kill(cg)
				_ = WaitCgroupEmpty(ctx, cg)
				_ = RemoveTree(ctx, cg)
			})
			initCmd, out := startBusyboxInit(t, cg)
			waitChildren(t, initCmd.Process.Pid, 1)

			eng, err := New(Options{Rules: rules})
			if err != nil {
				t.Fatal(err)
			}
			v := fleettest.View(t, rules)
			sb := v.Sandbox("lxc:" + id)
			if sb == nil {
				t.Fatalf("no sandbox lxc:%s in the view", id)
			}
			// Longer than busybox takes to reboot (two one-second pauses):
			// SIGKILL must not win the race for the check to mean anything.
			plan, err := PlanSandbox(v, sb, PlanOptions{Grace: 10 * time.Second, Deadline: 10 * time.Second, Protected: eng.Protected(), ProcRoot: "/proc"})
			if err != nil {
				t.Fatal(err)
			}
			// busybox's init takes its signals in sigtimedwait(2): it
			// handles none, and blocks them only while awake; the plan
			// must not say it will not act on the one it is sent.
			for _, r := range plan.Facts().Resisters {
				t.Errorf("the plan says busybox's init resists: %s", r)
			}
			var events []Event
			tot := eng.Run(context.Background(), plan, func(ev Event) { events = append(events, ev) })
			err = initCmd.Wait()
			ws, _ := initCmd.ProcessState.Sys().(syscall.WaitStatus)
			sent := ""
			for _, ev := range events {
				if ev.Step == StepTerm && ev.PID == initCmd.Process.Pid {
					sent = ev.Signal
				}
			}
			if !tot.OK() || !ws.Signaled() || !slices.Contains(c.want, ws.Signal()) {
				for _, ev := range events {
					t.Logf("[%s] %s", ev.Status, ev.Text())
				}
				t.Logf("busybox init said:\n%s", out)
				t.Fatalf("the init was sent %s and ended %v (%v); want death by one of %v; totals %+v", sent, ws, err, c.want, tot)
			}
			if want := model.SignalName(cmp.Or(c.halt, unix.SIGTERM)); sent != want {
				t.Errorf("the init was sent %q, want %s", sent, want)
			}
			t.Logf("the init was sent %s and died of %s", sent, model.SignalName(ws.Signal()))
		})
	}
}

// presetRule is the preset rule named name.
func presetRule(t *testing.T, name string) *model.Rule {
	t.Helper()
	for _, r := range model.Presets() {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no preset rule %s", name)
	return nil
}

// startBusyboxInit starts busybox's init as pid 1 of a new pid and mount
// namespace, chrooted into a busybox root filesystem whose inittab runs
// one sleeping child, inside cgroup dir; its parent is the test, as
// lxc-start's monitor is a container init's. out collects what it says.
func startBusyboxInit(t *testing.T, dir string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	root := proctest.BusyboxRoot(t, t.TempDir())
	inittab := "::sysinit:/bin/true\n::respawn:/bin/sleep 1000\n"
	if err := os.WriteFile(filepath.Join(root, "etc/inittab"), []byte(inittab), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	out := &bytes.Buffer{}
	cmd := &exec.Cmd{
		Path:   "/bin/busybox",
		Args:   []string{"init"},
		Stdout: out,
		Stderr: out,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:      root,
			Cloneflags:  unix.CLONE_NEWPID | unix.CLONE_NEWNS,
			UseCgroupFD: true,
			CgroupFD:    fd,
			Pdeathsig:   unix.SIGKILL,
		},
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start busybox init: %v", err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			reap(cmd)
		}
	})
	return cmd, out
}
