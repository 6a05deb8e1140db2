package proc

import (
	"golang.org/x/sys/unix"
)

// minFDReserve is how many descriptors the scanner always leaves to the rest
// of sandtop (the terminal, teardown pidfds, inotify, a log file), on top of
// a quarter of the limit.
const minFDReserve = 256

// heldFDBudget returns how many descriptors a scanner may hold open at once:
// the soft RLIMIT_NOFILE, raised to the hard limit first, less a reserve.
//
// The Go runtime already raises the soft limit to the hard one at start-up
// (syscall package init, since Go 1.19; it restores the old soft limit in
// children it execs), so the Setrlimit here only matters for a program
// that lowered it again. A host whose hard limit is low (1024 is common)
// gets a budget of 768: the scanner then holds descriptors for that many
// processes and reads the others with open/read/close, which is correct,
// only slower.
func heldFDBudget() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	if rl.Cur < rl.Max {
		raised := rl
		raised.Cur = rl.Max
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &raised) == nil {
			rl = raised
		}
	}
	limit := rl.Cur
	if limit > 1<<24 { // RLIM_INFINITY, or near it: the kernel caps at nr_open anyway
		limit = 1 << 24
	}
	reserve := max(limit/4, minFDReserve)
	if limit <= reserve {
		return 0
	}
	return int(limit - reserve)
}
