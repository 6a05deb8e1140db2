package model

import (
	"testing"
	"time"

	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
)

// The kernel log names an OOM kill's victim by pid and comm. A VM's VMM
// killed by the host's OOM killer has no cgroup of the sandbox to place
// it, so the pid does: the VMM the view before the kill held. The badge
// stays once the VMM is gone. A pid another process took after the kill
// (the victim's, or one logged before sandtop looked at all) names no
// victim: the oom badge on a stranger's sandbox would be false.
func TestOOMVictimsByPID(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	boot := t0.Add(-time.Hour)
	at := func(d time.Duration) uint64 { return uint64((time.Hour + d) / (10 * time.Millisecond)) } // ticks since boot
	rules := Effective(nil, true)
	const vm = "vm0:job-1"
	vmm := func(pid int, comm string, started time.Duration) *proc.Process {
		p := modeltest.Proc(pid, 1, "/usr/bin/firecracker --api-sock /run/vm0/sock/job-1/api.sock", modeltest.Start(at(started)))
		p.Comm = comm
		return p
	}
	worker := func(pid int, started time.Duration) *proc.Process {
		p := modeltest.Proc(pid, 1, "/usr/bin/firecracker --api-sock /run/vm0/sock/job-2/api.sock", modeltest.Start(at(started)))
		p.Comm = "python3"
		return p
	}
	kill := func(pid int, comm string, when time.Duration) proc.OOMKill {
		return proc.OOMKill{Time: t0.Add(when), PID: pid, Comm: comm, Constraint: "CONSTRAINT_NONE", TaskMemcg: "/", OOMMemcg: "/"}
	}
	look := func(w *Watch, when time.Duration, kills []proc.OOMKill, procs ...*proc.Process) *View {
		snap := modeltest.Snapshot(proc.Snapshot{Time: t0.Add(when), BootTime: boot, ClockTicks: 100, OOMKills: kills}, procs...)
		return w.Apply(Build(snap, rules, nil))
	}
	oom := func(v *View, key string) *Sandbox {
		if sb := v.Sandbox(key); sb != nil && sb.HasBadge(BadgeOOM) {
			return sb
		}
		return nil
	}

	t.Run("vmm", func(t *testing.T) {
		var w Watch
		killed := []proc.OOMKill{kill(70, "firecracker", 3*time.Second)}
		// The VMM's sandbox lives on in a second process of its process
		// group: the badge and its evidence name the VMM.
		member := modeltest.Proc(71, 70, "/usr/bin/firecracker --api-sock /run/vm0/sock/job-1/api.sock", modeltest.PGID(70), modeltest.Start(at(-time.Minute)))
		member.Comm = "fc_vcpu 0"
		look(&w, 0, nil, vmm(70, "firecracker", -time.Minute), member)
		for _, when := range []time.Duration{5 * time.Second, 10 * time.Second} {
			sb := oom(look(&w, when, killed, member), vm)
			if sb == nil {
				t.Fatalf("at %s: the VM whose VMM the host's OOM killer killed has no oom badge", when)
			}
			if e := sb.Trouble.OOM[0]; !e.VMM || !e.Host || e.PID != 70 {
				t.Errorf("at %s: evidence %+v, want the VMM, killed by the host's OOM killer", when, e)
			}
		}
	})
	t.Run("pid-reused", func(t *testing.T) {
		var w Watch
		look(&w, 0, nil, worker(90, -time.Minute))
		// pid 70 was a python3 outside any sandbox, OOM-killed at 3 s; at
		// 4 s a VMM took the pid.
		killed := []proc.OOMKill{kill(70, "firecracker", 3*time.Second)}
		for _, when := range []time.Duration{5 * time.Second, 10 * time.Second} {
			if sb := oom(look(&w, when, killed, worker(90, -time.Minute), vmm(70, "firecracker", 4*time.Second)), vm); sb != nil {
				t.Fatalf("at %s: oom badge on a VMM that started after the kill: %+v", when, sb.Trouble.OOM)
			}
		}
	})
	t.Run("comm-differs", func(t *testing.T) {
		var w Watch
		look(&w, 0, nil, vmm(70, "firecracker", -time.Minute))
		// The log's victim had pid 70 but another comm: not this VMM
		// (which lives on, so it was not killed).
		killed := []proc.OOMKill{kill(70, `py\x1bthon`, 3*time.Second)}
		if sb := oom(look(&w, 5*time.Second, killed, vmm(70, "firecracker", -time.Minute)), vm); sb != nil {
			t.Fatalf("oom badge for a kill of another comm: %+v", sb.Trouble.OOM)
		}
	})
	t.Run("before-the-first-look", func(t *testing.T) {
		// A kill logged half an hour before sandtop started: the process
		// with its pid now is not known to be the victim, even with the
		// same comm, and stays unbadged at every later look.
		var w Watch
		killed := []proc.OOMKill{kill(70, "firecracker", -30*time.Minute)}
		for _, when := range []time.Duration{0, 5 * time.Second} {
			if sb := oom(look(&w, when, killed, vmm(70, "firecracker", -40*time.Minute)), vm); sb != nil {
				t.Fatalf("at %s: oom badge from a kill logged before the first look: %+v", when, sb.Trouble.OOM)
			}
		}
	})
}
