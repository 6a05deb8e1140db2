package proc

import (
	"sync"

	"golang.org/x/sys/unix"
)

// minFDReserve is how many descriptors the scanner always leaves to the rest
// of sandtop (the terminal, teardown pidfds, inotify, a log file), on top of
// a quarter of the limit.
const minFDReserve = 256

// processFDs is the budget every long-lived scanner of the process shares.
// Scanners run side by side: the screen's and, while a teardown runs, its
// verify scanner; the reaper's and its teardowns'. A budget of its own for
// each, three quarters of the limit, would let two of them take all of it
// and more, and leave the teardown's pidfds and its audit record none.
var processFDs = sync.OnceValue(newFDBudget)

// scannerFDs is the budget NewScanner gives a long-lived scanner: a
// variable so that the package's tests can give each scanner one of its
// own, and count what each holds.
var scannerFDs = processFDs

// newFDBudget is a budget of heldFDBudget descriptors.
func newFDBudget() *fdBudget {
	b := &fdBudget{}
	b.limit.Store(int64(heldFDBudget()))
	return b
}

// heldFDBudget returns how many descriptors the scanners may hold open at once:
// the soft RLIMIT_NOFILE, raised to the hard limit first, less a reserve.
//
// The Go runtime already raises the soft limit to the hard one at start-up
// (syscall package init, since Go 1.19; it restores the old soft limit in
// children it execs), so the Setrlimit here only matters for a program
// that lowered it again. A host whose hard limit is low (1024 is common)
// gets a budget of 768: the scanners then hold descriptors for that many
// processes and read the others with open/read/close, which is correct,
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
