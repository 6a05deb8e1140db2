package proc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// pidBirths tells a refresh whether any pid was allocated since the last
// one, from the last field of /proc/loadavg: the pid most recently handed
// out in the reader's pid namespace (proc(5); fs/proc/loadavg.c prints
// idr_get_cursor of task_active_pid_ns(current) minus one). Listing /proc
// costs the kernel a dentry lookup per process (proc_pid_readdir,
// proc_fill_cache): 14% of a refresh's CPU at 3,000 processes, profiled.
// When the last pid has not moved, no process (nor thread) was created in
// the namespace, so the last listing still names every live process;
// departures show as failed stat reads, as they always do.
//
// The test is sound only when the scanned procfs belongs to the scanner's
// own pid namespace (its "self" is our pid): a procfs of another namespace
// would be asked about the wrong one, so there it always lists. It is read
// before the listing it vouches for, so a birth during that listing moves
// it and the next refresh lists again. A whole wrap of the pid space
// between two refreshes, ending on the same pid, would go unnoticed until
// the next birth: pid_max allocations in one interval.
type pidBirths struct {
	path string // "" when the test cannot be used
	buf  []byte
	last []byte
	seen bool
	// prev and cur are the last pids read by the call before and by the
	// last call (see span).
	prev, cur int
}

func newPIDBirths(root string, realProcfs bool) pidBirths {
	if !realProcfs || readSelf(root) != os.Getpid() {
		return pidBirths{}
	}
	return pidBirths{path: filepath.Join(root, "loadavg"), buf: make([]byte, 128)}
}

// none reads the last pid and reports whether it is the one the previous
// call read. The first call, and any failure, answer false.
func (b *pidBirths) none() bool {
	if b.path == "" {
		return false
	}
	data, err := readFileInto(b.path, &b.buf, 4096, true)
	if err != nil {
		b.seen = false
		return false
	}
	data = bytes.TrimSpace(data)
	last := data[bytes.LastIndexByte(data, ' ')+1:]
	n, err := strconv.Atoi(string(last))
	if err != nil {
		b.seen = false
		return false
	}
	same := b.seen && bytes.Equal(last, b.last)
	if !b.seen {
		b.cur = 0
	}
	b.prev, b.cur = b.cur, n
	b.last, b.seen = append(b.last[:0], last...), true
	return same
}

// span returns the pids allocated between the last two calls of none,
// (from, to], when both calls read one and the pid space did not wrap in
// between (to is above from): every process born in between has one of
// them, bar one given a pid below the cursor by hand (ns_last_pid, or
// clone3's set_tid), which the periodic listing finds (see pidTable.scan).
func (b *pidBirths) span() (from, to int, ok bool) {
	return b.prev, b.cur, b.seen && b.prev > 0 && b.cur > b.prev
}
