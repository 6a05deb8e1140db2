package teardown

import (
	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc"
)

// Programs that relay job control -- sudo, su, nsenter and unshare with
// --fork, a shell -- stop themselves when the child they wait for stops,
// so that their own parent sees the stop. The stop pass SIGSTOPs the
// target; a relaying parent outside it then stops too, and once its child
// is killed nobody continues it: it stays in T with the child's zombie
// unreaped. Continuing a process that stopped as a side effect of the
// teardown restores it; the teardown leaves nothing outside its target
// stopped that was running when it began.

// maxRelayDepth bounds the walk up from the target: relays come in short
// chains (sudo, ip netns exec, sudo -u).
const maxRelayDepth = 16

// relay is an ancestor of the target, outside it, that was not stopped
// when the teardown began.
type relay struct {
	id   proc.Identity
	comm string
}

// noteRelays records the target's ancestors outside it that are running
// now, up to PID 1 or a process sandtop must never signal. The walk
// starts from each pinned member's parent as read through its pidfd: the
// plan's parent may have died since, its pid another process's now, and
// a member no longer pinned is never stopped, so nothing relays its stop.
func (r *run) noteRelays() {
	inside := make(map[int]bool, len(r.p.Members))
	for _, m := range r.p.Members {
		inside[m.PID] = true
	}
	seen := map[int]bool{}
	for _, m := range r.p.Members {
		pin := r.pins[m.Identity]
		if pin == nil {
			continue
		}
		for pid, depth := pin.PPID, 0; pid > 1 && !inside[pid] && !seen[pid] && depth < maxRelayDepth; depth++ {
			seen[pid] = true
			st, err := proc.ReadStat(r.e.procRoot, pid)
			if err != nil || r.refused(&proc.Process{PID: pid, PPID: st.PPID, Flags: st.Flags, Comm: st.Comm}) != nil {
				break
			}
			if !stoppedState(st.State) {
				r.relays = append(r.relays, relay{id: proc.Identity{PID: pid, Start: st.Start}, comm: st.Comm})
			}
			pid = st.PPID
		}
	}
}

func stoppedState(st byte) bool { return st == 'T' || st == 't' }

// resumeRelays continues each recorded ancestor that the teardown left
// stopped, through a pidfd pinned to its identity, and says so.
func (r *run) resumeRelays() {
	for _, rl := range r.relays {
		st, err := proc.ReadStat(r.e.procRoot, rl.id.PID)
		if err != nil || st.Start != rl.id.Start || st.State != 'T' {
			continue // gone, another process, or running: nothing to restore
		}
		pin, err := Pin(r.e.procRoot, rl.id)
		if err != nil {
			continue
		}
		err = pin.Signal(unix.SIGCONT)
		pin.Close()
		if err != nil {
			r.fail(StepResume, rl.id.PID, rl.comm, "SIGCONT", err)
			continue
		}
		r.event(Event{Step: StepResume, PID: rl.id.PID, Comm: rl.comm, Signal: "SIGCONT", Status: OK,
			Detail: "outside the target, it stopped itself when its child was stopped (job-control relay): resumed as it was before the teardown"})
	}
}
