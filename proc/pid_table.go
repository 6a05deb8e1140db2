package proc

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// The hot path of a refresh: one stat read per live process, through a
// descriptor held open on its /proc/PID/stat and re-read with pread(2) at
// offset 0, plus a getdents64 of /proc to find births and deaths.
//
// Why not procfs: procfs.Proc.Stat opens the file with os.Open (about nine
// system calls with the read to EOF and the close) and parses it with
// fmt.Fscan (some 20 allocations). Measured at 10,000 processes on the
// 2-core VMs sandtop runs on, a steady refresh through it cost 490-710 ms and
// 23-26 MB of garbage, against a floor (readdir plus open/read/close of
// every stat, direct system calls) of 105-135 ms. A held descriptor costs
// one pread, parsed in place by parseStat: 60-80 ms a refresh, 57
// allocations whatever the number of processes (BenchmarkScanSteady,
// BenchmarkScanFloor). What is left is the kernel rendering each stat
// (do_task_stat), about 60% of what open/read/close costs here, in C too.
//
// Why a held descriptor cannot be mistaken for a recycled pid: an open
// /proc/PID file refers to the process's struct pid, not to the number.
// Once that process has been reaped, every read of the descriptor fails
// with ESRCH (proc_single_show finds no task), even when a new process has
// been given the same number; the listing then shows the number, the
// pread fails, and the pid is opened afresh and gets its new start time.
// TestHeldStatDescriptorAfterExit checks this on the running kernel. The
// start time is still compared on every read, so even a kernel that broke
// this rule could not hand one process's stat to another's identity.
//
// Descriptors are only held on a real procfs (statfs magic PROC_SUPER_MAGIC),
// where that rule holds; a fixture tree on another filesystem is read with
// open/read/close every time, so tests that rewrite its files see the change.

// procSuperMagic is PROC_SUPER_MAGIC (include/uapi/linux/magic.h).
const procSuperMagic = 0x9fa0

// Listing /proc costs the kernel a dentry per process (proc_pid_readdir,
// proc_fill_cache): at 10,000 processes a fifth of a steady refresh. On a
// host where anything creates a thread now and then (a Go program's
// runtime does), pidBirths.none almost never holds, but only a few pids
// are handed out between two refreshes, and pids are handed out upwards
// from the cursor: a scan looks at those few instead (a thread's pid is
// reachable as /proc/TID too, so each is checked to lead its thread
// group), and lists /proc anyway every listEvery scans (a pid set by
// hand, below the cursor, is found then), or when more than maxProbed
// pids went by, or when the cursor wrapped.
const (
	maxProbed = 64
	listEvery = 8
)

// shedBatch is how many held descriptors are given back at once when an
// open fails with EMFILE or ENFILE.
const shedBatch = 64

// pidSlot is one pid the scanner followed in its last scan.
type pidSlot struct {
	pid int
	// fd is the held /proc/PID/stat descriptor, or -1.
	fd int
	// start is the start time (stat field 22) of the process fd was opened
	// on, checked against every read.
	start uint64
	// comm is the last task name read, handed back to parseStat so that an
	// unchanged name costs no allocation.
	comm string
	// parentStart is the start time the parent had when the stat was last
	// read: a reused stat (see cgroup_cpu.go) is only as good as the
	// parent it names. have says the slot was read before; reuse that
	// this scan reuses its last stat, which the scanner keeps (the
	// slot does not: a copy here was 100 bytes a process, twice over
	// with the spare slice).
	parentStart uint64
	have, reuse bool
	// stale says the stat was reused when a read was due (its cgroup was
	// settled, see ScanHints): the next scan that does not settle it reads
	// it, whatever its round.
	stale bool
	// pidfd watches the exit of a process aside (pid_aside.go), or is -1;
	// exited says this scan's poll found it readable, aside that the
	// scan was asked to carry the stat.
	pidfd         int
	exited, aside bool
	// entry is the scanner's cache entry for this process as of the last
	// scan (see remember): the scan hands it to quiet and to the static
	// pass, which would otherwise look the identity up twice per process.
	entry *cacheEntry
}

// reuse is what a scan may do with a process's last stat.
type reuse uint8

const (
	// reuseNone: read it.
	reuseNone reuse = iota
	// reuseQuiet: its cgroup did not run; reuse it but one scan in
	// reuseRounds.
	reuseQuiet
	// reuseSettled: its cgroup did not run and is settled; reuse it.
	reuseSettled
	// reuseAside: it is aside (pid_aside.go); carry it but one scan in
	// reuseRounds.
	reuseAside
)

// statRead is one process as the stat pass found it.
type statRead struct {
	st pidStat
	// entry holds the static fields for this scan: cached, or read for a
	// new identity by readStatics. last is the entry the pid's slot kept
	// from the scan before (pidSlot.entry), for readStatics to check.
	entry, last *cacheEntry
	// gone is set when the process could not be read (it exited since the
	// listing, or its stat makes no sense) or vanished while its static
	// fields were read.
	gone bool
}

// readResult is how one stat read went.
type readResult uint8

const (
	readOK readResult = iota
	// readFailed: the pid exited since the listing, or its stat makes no
	// sense; either way there is no identity to report it under.
	readFailed
	// readNoFDs: the open failed with EMFILE or ENFILE; retried once the
	// scanner has given back descriptors.
	readNoFDs
)

// minStatsPerWorker is the fewest pids for which another goroutine reads
// stats: below it, starting one costs more than it saves. A variable so
// that a test can run the parallel path on a small host.
var minStatsPerWorker = 256

// pidTable lists /proc and reads every listed pid's stat, holding a
// descriptor per process when it can.
type pidTable struct {
	root string
	// holdable is true when root is a real procfs.
	holdable bool
	// births watches for new pids, so a refresh can skip the listing
	// when there are none (see pidBirths).
	births pidBirths
	// fds counts the descriptors held, here and in the cgroup files.
	fds *fdBudget
	// slots are the pids of the last scan, ascending; next is the spare
	// slice the next scan fills (the two are swapped each scan).
	slots, next []pidSlot
	lister      pidLister
	// scans counts the scans, to spread the reads that bound how long a
	// stat is reused over all of them (see reuseRounds); listed is the
	// scan that last listed /proc.
	scans, listed uint
	// statusBuf is the buffer of isLeader.
	statusBuf []byte
	// bufs are the buffers of the reading goroutines, one each; resultBuf
	// holds the results of the reads.
	bufs      []*statBuf
	resultBuf []readResult
	// polls and polled are the exit poll's buffers (pollExits); carried
	// the pids whose stat the last scan carried (see reuseAside).
	polls   []unix.PollFd
	polled  []int
	carried []int
}

// statBuf is what one goroutine reads stat files with: the file's bytes,
// and the path of one it opens.
type statBuf struct {
	data, path []byte
}

func newPIDTable(root string, fds *fdBudget) pidTable {
	var sfs unix.Statfs_t
	holdable := unix.Statfs(root, &sfs) == nil && sfs.Type == procSuperMagic
	return pidTable{root: root, holdable: holdable, fds: fds, births: newPIDBirths(root, holdable)}
}

// scan lists the pids and appends each one's stat to found, ascending by
// pid; an entry whose pid could not be read is marked gone. It counts the
// stats read in n, and reads with up to workers goroutines. quiet, when
// not nil, says of each identity whether its stat may be reused from the
// last scan (its cgroup did not run since; see cgroup_cpu.go), and if so
// sets that stat; it is handed the cache entry the slot kept, which may
// no longer be the identity's (see scanCache.entry).
//
// The work is in three passes: matching the listing against the last
// scan's pids (departed ones lose their descriptor at once), reading every
// stat, and settling the results. Only the reads, ~95% of a steady refresh
// and all of it kernel time (pread regenerates the stat text), run in
// parallel: each goroutine reads its own slots into its own buffer.
func (t *pidTable) scan(found []statRead, n *readCounts, workers int, quiet func(Identity, *cacheEntry, *pidStat) reuse) ([]statRead, error) {
	var pids []int
	none := t.births.none()
	from, to, probe := t.births.span()
	probe = probe && to-from <= maxProbed
	switch {
	case (none || probe) && len(t.slots) > 0 && t.scans-t.listed < listEvery:
		// Nothing was born since the last listing, or only the few pids
		// handed out since: the last scan's pids are still the
		// candidates, those that died fail their read below, and the
		// new pids that are processes (not threads) join them.
		pids = t.lister.pids[:0]
		for _, sl := range t.slots {
			pids = append(pids, sl.pid)
		}
		if !none {
			for pid := from + 1; pid <= to; pid++ {
				if t.isLeader(pid) {
					pids = append(pids, pid)
				}
			}
			slices.Sort(pids)
			pids = slices.Compact(pids)
		}
		t.lister.pids = pids
	default:
		var err error
		if pids, err = t.lister.list(t.root); err != nil {
			return found, err
		}
		n.list++
		t.listed = t.scans + 1
	}
	t.next = slices.Grow(t.next[:0], len(pids))
	old := t.slots
	i := 0
	for _, pid := range pids {
		for i < len(old) && old[i].pid < pid {
			t.release(&old[i]) // exited: close its descriptor at once
			i++
		}
		slot := pidSlot{pid: pid, fd: -1, pidfd: -1}
		if i < len(old) && old[i].pid == pid {
			slot = old[i]
			i++
		}
		t.next = append(t.next, slot)
	}
	for ; i < len(old); i++ {
		t.release(&old[i])
	}
	clear(old) // drop the comm strings
	t.slots, t.next = t.next, old[:0]
	t.scans++

	first := len(found)
	found = slices.Grow(found, len(t.slots))[:first+len(t.slots)]
	reads := found[first:]
	reused := 0
	t.pollExits()
	for k := range t.slots {
		sl := &t.slots[k]
		reads[k] = statRead{last: sl.entry}
		// quiet is asked even in the scan that reads this process anyway:
		// it is also what finds a process that left its cgroup, in the
		// one scan of reuseRounds that checks the cgroup's members, which
		// may be this one.
		q := reuseNone
		if quiet != nil && sl.have {
			q = quiet(Identity{PID: sl.pid, Start: sl.start}, sl.entry, &reads[k].st)
		}
		switch {
		case q == reuseAside && (sl.pidfd < 0 || sl.exited):
			// Read now: it exited, or it is watched from now on (the read
			// proves the new pidfd is its own; see pid_aside.go).
			t.watchExit(sl)
			q = reuseNone
		case q != reuseAside:
			t.unwatchExit(sl)
		}
		sl.aside = q == reuseAside
		due := (uint(sl.pid)+t.scans)%reuseRounds == 0
		sl.reuse = q == reuseSettled || ((q == reuseQuiet || q == reuseAside) && !due && !sl.stale)
		sl.stale = sl.reuse && (due || sl.stale)
		if sl.reuse {
			reused++
		} else {
			reads[k].st = pidStat{}
		}
	}
	n.stat += len(t.slots) - reused

	results := t.readAll(reads, workers)
	if reused > 0 {
		n.stat += t.checkParents(reads, results)
	}
	t.carried = t.carried[:0]
	for k := range t.slots {
		if sl := &t.slots[k]; sl.reuse && sl.aside {
			t.carried = append(t.carried, sl.pid)
		}
	}

	t.settle(reads, results)
	return found, nil
}

// settle keeps the slots whose stat was read, retrying those that ran out
// of descriptors, and drops the others, compacting t.slots in place. At
// the k-th slot, the kept ones lie below len(kept), and between them and
// k lie the old places of slots already moved down or dropped: copies
// whose descriptors are a kept slot's own or closed already, which shed
// must leave alone (closing one would close a descriptor twice, the
// second time perhaps someone else's).
func (t *pidTable) settle(reads []statRead, results []readResult) {
	kept := t.slots[:0]
	for k := range t.slots {
		slot, r := t.slots[k], &reads[k]
		if results[k] == readNoFDs {
			t.shed(len(kept), k)
			slot = t.slots[k] // as shed left it
			results[k] = t.read(&slot, &r.st, t.bufs[0])
		}
		if results[k] != readOK {
			t.release(&slot)
			r.gone = true
			continue
		}
		if slot.start != r.st.start {
			t.unwatchExit(&slot) // not the process it was opened on
			slot.entry = nil
		}
		slot.start, slot.comm, slot.have = r.st.start, r.st.comm, true
		if !slot.reuse {
			slot.parentStart = t.startOf(reads, results, r.st.ppid)
		}
		kept = append(kept, slot)
	}
	clear(t.slots[len(kept):])
	t.slots = kept
}

// remember keeps in each slot the cache entry found gives its process
// (nil for one gone), for the next scan. found is what this scan's stat
// pass returned, completed by the static pass: its processes not gone are
// the slots, in the same order, bar those the static pass found gone.
func (t *pidTable) remember(found []statRead) {
	k := 0
	for i := range found {
		f := &found[i]
		for k < len(t.slots) && t.slots[k].pid < f.st.pid {
			t.slots[k].entry = nil
			k++
		}
		if k == len(t.slots) {
			return
		}
		if sl := &t.slots[k]; sl.pid == f.st.pid && !f.gone {
			sl.entry = f.entry
			k++
		}
	}
	for ; k < len(t.slots); k++ {
		t.slots[k].entry = nil
	}
}

// isLeader reports whether pid is a live process, the leader of its
// thread group: /proc/PID/status says Tgid equal to the pid.
func (t *pidTable) isLeader(pid int) bool {
	if t.statusBuf == nil {
		t.statusBuf = make([]byte, 4096)
	}
	b, err := readFileInto(filepath.Join(t.root, strconv.Itoa(pid), "status"), &t.statusBuf, 64<<10, true)
	if err != nil {
		return false
	}
	_, rest, ok := bytes.Cut(b, []byte("\nTgid:"))
	if !ok {
		return false
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	tgid, ok := parseUint(bytes.TrimSpace(line))
	return ok && tgid == uint64(pid)
}

// checkParents reads the stat of every reused process whose parent is not
// the one it had when the stat was read, alive: a parent that exits
// reparents its children at once, without their running, and may linger
// as a zombie with the same identity until it is reaped. It returns how
// many it read.
func (t *pidTable) checkParents(reads []statRead, results []readResult) int {
	n := 0
	// Siblings sit next to each other by pid: the parent of the process
	// before is not searched for again.
	lastPPID, j := -1, -1
	for k := range t.slots {
		sl := &t.slots[k]
		if !sl.reuse {
			continue
		}
		ppid := reads[k].st.ppid
		if ppid != lastPPID {
			lastPPID, j = ppid, t.indexOf(ppid)
		}
		if ppid == 0 || j >= 0 && results[j] == readOK &&
			reads[j].st.start == sl.parentStart && !reads[j].st.exited() {
			continue
		}
		sl.reuse = false
		reads[k] = statRead{last: sl.entry}
		results[k] = t.read(sl, &reads[k].st, t.bufs[0])
		n++
	}
	return n
}

// startOf is the start time this scan read for pid, or 0 when the pid was
// not listed or not read (its parent is outside the namespace, or gone).
func (t *pidTable) startOf(reads []statRead, results []readResult, pid int) uint64 {
	if k := t.indexOf(pid); k >= 0 && results[k] == readOK {
		return reads[k].st.start
	}
	return 0
}

// indexOf is the index of pid in t.slots, or -1.
func (t *pidTable) indexOf(pid int) int {
	lo, hi := 0, len(t.slots)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.slots[m].pid < pid {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(t.slots) || t.slots[lo].pid != pid {
		return -1
	}
	return lo
}

// readAll reads the stat of every slot into reads (reads[k] for
// t.slots[k]) with up to workers goroutines, and returns how each read
// went. The results slice is reused by the next call.
func (t *pidTable) readAll(reads []statRead, workers int) []readResult {
	workers = max(1, min(workers, len(t.slots)/minStatsPerWorker))
	for len(t.bufs) < workers {
		t.bufs = append(t.bufs, &statBuf{data: make([]byte, statBufSize)})
	}
	results := t.results(len(t.slots))
	work := func(buf *statBuf, from, to int) {
		for k := from; k < to; k++ {
			if t.slots[k].reuse {
				results[k] = readOK // reads[k] holds the reused stat
				continue
			}
			results[k] = t.read(&t.slots[k], &reads[k].st, buf)
		}
	}
	if workers == 1 {
		work(t.bufs[0], 0, len(t.slots))
		return results
	}
	// Contiguous ranges: every pid costs about the same to read.
	var wg sync.WaitGroup
	per := (len(t.slots) + workers - 1) / workers
	for w := range workers {
		from, to := w*per, min((w+1)*per, len(t.slots))
		wg.Go(func() { work(t.bufs[w], from, to) })
	}
	wg.Wait()
	return results
}

func (t *pidTable) results(n int) []readResult {
	if cap(t.resultBuf) < n {
		t.resultBuf = make([]readResult, n, n+n/4)
	}
	t.resultBuf = t.resultBuf[:n]
	return t.resultBuf
}

// read fills out from the slot's held descriptor when it has one and the
// descriptor still shows the same process; otherwise it opens the file,
// and holds the new descriptor when the budget allows. It may run on
// several goroutines at once, each with its own slots and buffer. The pid
// is the directory's, as procfs has it.
func (t *pidTable) read(slot *pidSlot, out *pidStat, buf *statBuf) readResult {
	// The last comm read is handed to parseStat, which keeps it when the
	// name did not change: no allocation per process per refresh.
	st := procfs.ProcStat{Comm: slot.comm}
	res := t.readStat(slot, &st, buf)
	if res == readOK {
		st.PID = slot.pid
		*out = compactStat(&st)
	}
	return res
}

func (t *pidTable) readStat(slot *pidSlot, st *procfs.ProcStat, buf *statBuf) readResult {
	if slot.fd >= 0 {
		n, err := preadOnce(slot.fd, buf.data)
		if err == nil {
			err = parseStatBytes(buf.data[:n], st)
		}
		if err == nil && st.Starttime == slot.start {
			return readOK
		}
		// ESRCH: the process this descriptor was opened on has been reaped
		// and the listed pid is a new one. Any other failure, or a start
		// time that moved, also ends our trust in the descriptor.
		t.release(slot)
	}
	path := appendStatPath(buf.path, t.root, slot.pid)
	buf.path = path
	fd, err := openReadC(path)
	switch {
	case errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE):
		return readNoFDs
	case err != nil:
		return readFailed
	}
	n, err := readOnce(fd, buf.data)
	if err == nil {
		err = parseStatBytes(buf.data[:n], st)
	}
	if err != nil {
		closeFD(fd)
		return readFailed
	}
	if t.holdable && t.fds.take() {
		slot.fd = fd
	} else {
		closeFD(fd)
	}
	return readOK
}

// shed answers EMFILE/ENFILE: the process (or the system) has run out of
// descriptors, so the scanner lowers its budget below what it holds and
// closes the difference, from the highest pids down (as far as its own
// descriptors go, when it shares the budget). The pids that lose their
// descriptor are read with open/read/close from then on. The slots in
// [staleFrom, staleTo) are not slots but the stale places settle leaves
// behind, and are skipped.
func (t *pidTable) shed(staleFrom, staleTo int) {
	t.fds.limit.Store(max(0, t.fds.held.Load()-shedBatch))
	for i := len(t.slots) - 1; i >= 0 && t.fds.held.Load() > t.fds.limit.Load(); i-- {
		if i >= staleFrom && i < staleTo {
			continue
		}
		t.release(&t.slots[i])
	}
}

// release closes the slot's held descriptors, if any.
func (t *pidTable) release(slot *pidSlot) {
	t.unwatchExit(slot)
	t.fds.close(&slot.fd)
}

// close releases every held descriptor.
func (t *pidTable) close() {
	for i := range t.slots {
		t.release(&t.slots[i])
	}
	t.slots = nil
}
