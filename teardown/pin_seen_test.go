package teardown

import (
	"testing"

	"github.com/sandtop/sandtop/proc"
)

// A verify scan is old by the time it is judged: a process it saw may
// have exited and its pid gone to another process. The run pins what the
// scan saw, the pid and the start time together, or nothing: the pid's
// new owner is never pinned, so never stopped or killed.
func TestPinSeenRefusesAPidsNewOwner(t *testing.T) {
	owner := startSleep(t)
	now := identity(t, owner.Process.Pid)
	// What the scan saw: an earlier process with the same pid.
	seen := proc.Identity{PID: now.PID, Start: now.Start - 1}
	e, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{e: e, p: &Plan{}, pins: map[proc.Identity]*Pinned{}, byPID: map[int]proc.Identity{}, dead: map[proc.Identity]bool{}}
	defer r.close()
	if r.pinSeen(seen, 0) {
		t.Fatalf("pinned pid %d's new owner (started at %d) for the process the scan saw (started at %d)", now.PID, now.Start, seen.Start)
	}
	if len(r.pins) != 0 || r.known(now.PID) {
		t.Fatalf("pins %v after a refused pin", r.pins)
	}
	if !r.pinSeen(now, 0) {
		t.Fatalf("did not pin the process the scan saw, still alive: %+v", now)
	}
	if r.pinSeen(now, 0) {
		t.Error("pinned the same process twice")
	}
	if !r.known(now.PID) {
		t.Error("the pinned process is not known")
	}
}
