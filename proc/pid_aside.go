package proc

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// A process aside is one the front end shows nothing of that sits outside
// every cgroup it settles: a container's shim or conmon, in the runtime's
// service cgroup beside the container's own (ScanHints.Aside). That
// cgroup runs whenever the daemon or any other shim does, so its usage
// cannot vouch for one process, and reading every shim's stat at every
// refresh was a fifth of the screen's CPU at a thousand sandboxes. Such a
// process's stat is carried from the scan before, read anyway one scan in
// reuseRounds, and read at once when it may have changed in a way that
// matters before then:
//   - it exited: a pidfd held on it polls readable as soon as it is a
//     zombie, and all of them are asked in one ppoll(2) a scan;
//   - it was not asleep when last read (running, in D, stopped): only a
//     process in interruptible sleep is carried;
//   - its parent changed (checkParents, as for any reused stat).
//
// What a carried stat can miss until its next read is the CPU time it
// used, its memory, and a fall into D or a stop: nothing of it is on
// screen, and each snapshot names the pids it carried (Snapshot.Carried),
// so that a rate is measured over the time between two reads, not between
// two scans.
//
// The pidfd is opened before the stat read that makes the process aside:
// a read that then finds the same start time proves that the pidfd was
// opened on that very process (while it lives, its pid is nobody else's).

// ppollNow is the zero timeout of the exit poll: it never waits.
var ppollNow unix.Timespec

// watchExit opens a pidfd on the slot's process, if it has none, and
// reports whether it holds one: not without room in the descriptor budget,
// nor on a kernel without pidfd_open(2).
func (t *pidTable) watchExit(sl *pidSlot) bool {
	if sl.pidfd >= 0 {
		return true
	}
	if !t.holdable || !t.fds.take() {
		return false
	}
	fd, errno := rawCall(unix.SYS_PIDFD_OPEN, uintptr(sl.pid), 0, 0, 0)
	if errno != 0 {
		t.fds.held.Add(-1)
		return false
	}
	sl.pidfd = int(fd)
	return true
}

// unwatchExit closes the slot's pidfd, if any.
func (t *pidTable) unwatchExit(sl *pidSlot) { t.fds.close(&sl.pidfd) }

// pollExits sets exited on every slot with a pidfd whose process has
// exited (or that the poll could not answer for), and clears it on the
// others.
func (t *pidTable) pollExits() {
	t.polls, t.polled = t.polls[:0], t.polled[:0]
	for k := range t.slots {
		sl := &t.slots[k]
		sl.exited = false
		if sl.pidfd >= 0 {
			t.polls = append(t.polls, unix.PollFd{Fd: int32(sl.pidfd), Events: unix.POLLIN})
			t.polled = append(t.polled, k)
		}
	}
	if len(t.polls) == 0 {
		return
	}
	_, errno := rawCall(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&t.polls[0])), uintptr(len(t.polls)), uintptr(unsafe.Pointer(&ppollNow)), 0)
	for i, k := range t.polled {
		// A poll that failed says nothing: read them all.
		t.slots[k].exited = errno != 0 || t.polls[i].Revents != 0
	}
}
