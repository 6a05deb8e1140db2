// Package oneproc runs a command that refreshes every second or so (the
// live screen, record) on one processor once its first refresh is done.
package oneproc

import (
	"os"
	"runtime"
	"sync"
)

// A steady refresh is one chain of goroutines (the tick, the scan, the
// grouping, the drawing), each handing the next its work. With a second
// processor idle, every hand-off and every ordinary system call wakes a
// thread for it: the runtime starts a spinning thread to look for work
// (runtime.wakep) and sysmon leaves its deep sleep to poll every 20 µs
// while the refresh runs. On an idle host those wake-ups were most of the
// screen's context switches, and at 10,000 processes they cost more CPU
// than the parallel stat reads saved (docs/performance.md, "One processor
// after the first refresh"). htop and top draw from one thread for the
// same reason. The first refresh keeps every processor: it reads every
// process cold, the operator is waiting for it, and its reads are spread
// over goroutines (proc.Scanner.readWorkers).

// Narrower narrows the process to one processor at its first Refreshed;
// nil (the user chose with GOMAXPROCS) does nothing.
type Narrower struct {
	mu sync.Mutex
	// done says the first Refreshed (or Stop) came; prev is the
	// processors the process had before it narrowed, 0 when it did not.
	done bool
	prev int
}

// AfterFirstRefresh returns the narrower of a long-running command, or
// nil when the user set GOMAXPROCS.
func AfterFirstRefresh() *Narrower {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return nil
	}
	return &Narrower{}
}

// Refreshed is called after each refresh; the first call narrows.
func (n *Narrower) Refreshed() {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.done {
		n.done = true
		n.prev = runtime.GOMAXPROCS(1)
	}
}

// Stop gives the process back the processors it had, for whatever runs
// next in it (commands run in process, as tests run them); a Refreshed
// after it narrows nothing.
func (n *Narrower) Stop() {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.done = true
	if n.prev > 0 {
		runtime.GOMAXPROCS(n.prev)
		n.prev = 0
	}
}
