package proc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc/proctest"
)

// TestHeldStatDescriptorAfterExit checks on the running kernel the rule the
// hot path relies on (pid_table.go): a descriptor held on /proc/PID/stat
// keeps reading its own process while it lives and while it is a zombie,
// and fails with ESRCH once it has been reaped, whatever process gets the
// pid next.
func TestHeldStatDescriptorAfterExit(t *testing.T) {
	child := startSleep(t)
	pid := child.Process.Pid
	fd, err := openRead(statPath("/proc", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	buf := make([]byte, statBufSize)
	read := func() (procfs.ProcStat, error) {
		var st procfs.ProcStat
		n, err := preadOnce(fd, buf)
		if err != nil {
			return st, err
		}
		return st, parseStat(buf[:n], &st)
	}
	alive, err := read()
	if err != nil || alive.PID != pid || alive.State == "Z" {
		t.Fatalf("live child: %+v, %v", alive, err)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var zombie procfs.ProcStat
	if !proctest.Eventually(5*time.Second, func() bool { zombie, err = read(); return err == nil && zombie.State == "Z" }) {
		t.Fatalf("killed, unreaped child never read as a zombie: %+v, %v", zombie, err)
	}
	if zombie.Starttime != alive.Starttime {
		t.Errorf("zombie start time %d, want %d", zombie.Starttime, alive.Starttime)
	}
	_ = child.Wait()
	if st, err := read(); !errors.Is(err, unix.ESRCH) {
		t.Errorf("pread after the reap = %+v, %v; want ESRCH", st, err)
	}
}

// heldStat returns the descriptor the scanner holds for pid, or -1.
func heldStat(s *Scanner, pid int) int {
	i, ok := slices.BinarySearchFunc(s.pids.slots, pid, func(sl pidSlot, pid int) int { return sl.pid - pid })
	if !ok {
		return -1
	}
	return s.pids.slots[i].fd
}

// checkHeldCount checks the budget's count against the descriptors actually
// held.
func checkHeldCount(t *testing.T, s *Scanner) {
	t.Helper()
	n := 0
	for _, sl := range s.pids.slots {
		if sl.fd >= 0 {
			n++
		}
	}
	for _, c := range []*cgroupFiles{s.cgroups, s.freezers} {
		for _, f := range c.files {
			if f.fd >= 0 {
				n++
			}
		}
	}
	for _, f := range s.cpu.files {
		if f.fd >= 0 {
			n += 2 // cpu.stat and cgroup.procs
		}
	}
	n += len(s.cpu.parents) // their cpu.stat
	if int64(n) != s.fds.held.Load() || s.fds.held.Load() > s.fds.limit.Load() {
		t.Errorf("%d descriptors held, the budget counts %d of %d", n, s.fds.held.Load(), s.fds.limit.Load())
	}
}

// TestScanClosesDescriptorsOfDeparted: a refresh holds a stat descriptor per
// process and closes the one of a process that exited at once.
func TestScanClosesDescriptorsOfDeparted(t *testing.T) {
	child := startSleep(t, "held")
	pid := child.Process.Pid
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !proctest.Eventually(5*time.Second, func() bool { p := scan(t, s).Proc(pid); return p != nil && p.Comm == "sleep" }) {
		t.Fatalf("child %d never seen", pid)
	}
	checkHeldCount(t, s)
	fd := heldStat(s, pid)
	if fd < 0 {
		t.Fatalf("no descriptor held for %d", pid)
	}
	link := filepath.Join("/proc/self/fd", strconv.Itoa(fd))
	if target, err := os.Readlink(link); err != nil || target != statPath("/proc", pid) {
		t.Fatalf("fd %d -> %q, %v; want %s", fd, target, err, statPath("/proc", pid))
	}
	stopChild(t, child)
	if p := scan(t, s).Proc(pid); p != nil && p.Comm == "sleep" {
		t.Fatalf("reaped child still scanned: %+v", *p)
	}
	if target, err := os.Readlink(link); err == nil && target == statPath("/proc", pid) {
		t.Errorf("fd %d of the departed %d is still open", fd, pid)
	}
	checkHeldCount(t, s)
}

// TestScanVerifiesHeldIdentity: a held descriptor whose read shows another
// start time than the one it was opened on is never trusted: the pid is
// opened afresh and the process keeps its true identity and fields.
func TestScanVerifiesHeldIdentity(t *testing.T) {
	child := startSleep(t, "verify-me")
	pid := child.Process.Pid
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want *Process
	if !proctest.Eventually(5*time.Second, func() bool {
		want = scan(t, s).Proc(pid)
		return want != nil && slices.Contains(want.Argv, "verify-me")
	}) {
		t.Fatalf("child %d never seen", pid)
	}
	i, ok := slices.BinarySearchFunc(s.pids.slots, pid, func(sl pidSlot, pid int) int { return sl.pid - pid })
	if !ok || s.pids.slots[i].fd < 0 {
		t.Fatalf("no descriptor held for %d", pid)
	}
	s.pids.slots[i].start++ // as if the descriptor had been opened on another process
	got := scan(t, s).Proc(pid)
	if got == nil || got.ID() != want.ID() || !slices.Equal(got.Argv, want.Argv) {
		t.Fatalf("after a start-time mismatch: %+v, want %+v", got, want)
	}
	i, ok = slices.BinarySearchFunc(s.pids.slots, pid, func(sl pidSlot, pid int) int { return sl.pid - pid })
	if sl := s.pids.slots[i]; !ok || sl.start != want.Start || sl.fd < 0 {
		t.Errorf("slot after re-open = %+v, want pid %d start %d and a descriptor", sl, pid, want.Start)
	}
	checkHeldCount(t, s)
}

// TestScanFDBudget: with fewer descriptors allowed than processes, the
// scanner holds what it may and reads the rest with open/read/close.
func TestScanFDBudget(t *testing.T) {
	child := startSleep(t, "budget")
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.fds.limit.Store(3)
	for range 2 {
		snap := scan(t, s)
		if int64(len(snap.Procs)) <= s.fds.limit.Load() || s.fds.held.Load() > s.fds.limit.Load() {
			t.Fatalf("%d processes, %d descriptors held; want more processes than the budget of %d", len(snap.Procs), s.fds.held.Load(), s.fds.limit.Load())
		}
		if p := snap.Proc(child.Process.Pid); p == nil || p.Partial {
			t.Errorf("child read under the budget: %+v", p)
		}
		checkHeldCount(t, s)
	}
}

// TestScannersShareOneBudget: the scanners of one process hold no more
// descriptors together than one budget, so that two at once (the screen's
// and a teardown's verify scanner) leave the rest of the process its
// reserve.
func TestScannersShareOneBudget(t *testing.T) {
	startSleep(t, "shared")
	shared := &fdBudget{}
	const limit = 12
	shared.limit.Store(limit)
	scannerFDs = func() *fdBudget { return shared }
	t.Cleanup(func() { scannerFDs = newFDBudget })
	var both []*Scanner
	for range 2 {
		s, err := NewScanner(Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		both = append(both, s)
	}
	for _, s := range both {
		if snap := scan(t, s); len(snap.Procs) <= limit {
			t.Skipf("%d processes: not more than the budget", len(snap.Procs))
		}
	}
	held := 0
	for _, s := range both {
		for _, sl := range s.pids.slots {
			if sl.fd >= 0 {
				held++
			}
		}
	}
	if held == 0 || shared.held.Load() > limit || int64(held) > shared.held.Load() {
		t.Errorf("two scanners hold %d stat descriptors, the shared budget counts %d of %d", held, shared.held.Load(), limit)
	}
}

// TestScanShedsOnEMFILE: when the process runs out of descriptors mid-scan,
// the scanner gives back some of those it holds, lowers its budget, and the
// scan completes.
func TestScanShedsOnEMFILE(t *testing.T) {
	child := startSleep(t, "shed")
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	open, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = uint64(len(open) + 20)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
			t.Errorf("restore RLIMIT_NOFILE: %v", err)
		}
	})
	s.fds.limit.Store(1 << 20) // believe there is room, so EMFILE comes first
	snap := scan(t, s)
	if p := snap.Proc(child.Process.Pid); p == nil {
		t.Fatalf("child missing from a scan that ran out of descriptors")
	}
	if snap.Proc(os.Getpid()) == nil || len(snap.Procs) < 20 {
		t.Fatalf("scan that ran out of descriptors has %d processes", len(snap.Procs))
	}
	if s.fds.limit.Load() >= 1<<20 {
		t.Errorf("budget still %d after EMFILE", s.fds.limit.Load())
	}
	checkHeldCount(t, s)
}

// TestHotPathAllocs: re-reading a known process through its held
// descriptor allocates nothing.
func TestHotPathAllocs(t *testing.T) {
	child := startSleep(t)
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	scan(t, s)
	i, ok := slices.BinarySearchFunc(s.pids.slots, child.Process.Pid, func(sl pidSlot, pid int) int { return sl.pid - pid })
	if !ok || s.pids.slots[i].fd < 0 {
		t.Fatalf("no descriptor held for %d", child.Process.Pid)
	}
	slot := &s.pids.slots[i]
	var st pidStat
	buf := &statBuf{data: make([]byte, statBufSize)}
	if n := testing.AllocsPerRun(100, func() {
		if s.pids.read(slot, &st, buf) != readOK {
			t.Fatal("read failed")
		}
	}); n != 0 {
		t.Errorf("held-descriptor read: %v allocations, want 0", n)
	}
}

func TestListPIDs(t *testing.T) {
	var l pidLister
	got, err := l.list(filepath.Join(hostRoot, "proc"))
	if err != nil {
		t.Fatal(err)
	}
	// Names that are not pids (self, net, stat, sys) are skipped.
	if want := []int{1, 2, 3, 4, 100, 201, 300, 301, 302, 400, 401}; !slices.Equal(got, want) {
		t.Errorf("fixture pids = %v, want %v", got, want)
	}
	live, err := l.list("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(live, os.Getpid()) || !slices.IsSorted(live) {
		t.Errorf("/proc listing (%d pids) lacks this process %d or is not sorted", len(live), os.Getpid())
	}
	if _, err := l.list(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing root: %v, want ErrNotExist", err)
	}
}

func TestAppendPIDs(t *testing.T) {
	// rec is a linux_dirent64 of size bytes whose d_reclen says reclen.
	rec := func(name string, size, reclen int) []byte {
		b := make([]byte, size)
		b[16], b[17] = byte(reclen), byte(reclen>>8)
		copy(b[19:], name)
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want []int
		bad  bool
	}{
		{name: "pids and others", in: slices.Concat(rec("1", 24, 24), rec("self", 24, 24), rec("4194304", 32, 32), rec("..", 24, 24)), want: []int{1, 4194304}},
		{name: "record longer than the buffer", in: rec("12", 20, 24), bad: true},
		{name: "record shorter than its header", in: rec("12", 24, 10), bad: true},
		{name: "buffer shorter than a header", in: rec("", 24, 24)[:12], bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendPIDs(nil, tt.in)
			if (err != nil) != tt.bad || !slices.Equal(got, tt.want) {
				t.Errorf("appendPIDs = %v, %v; want %v (error %v)", got, err, tt.want, tt.bad)
			}
		})
	}
}

// TestScanParallelReads: stats read by several goroutines give the same
// snapshot as one goroutine does (run it with -race).
func TestScanParallelReads(t *testing.T) {
	var kids []int
	for range 4 {
		kids = append(kids, startSleep(t, "parallel").Process.Pid)
	}
	old := minStatsPerWorker
	minStatsPerWorker = 4
	t.Cleanup(func() { minStatsPerWorker = old })
	serial, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer serial.Close()
	serial.workers = 1
	parallel, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer parallel.Close()
	parallel.workers = 3
	// Wait until every child has exec'd, so both scans see the same thing.
	if !proctest.Eventually(5*time.Second, func() bool {
		snap := scan(t, serial)
		for _, pid := range kids {
			if p := snap.Proc(pid); p == nil || p.Comm != "sleep" {
				return false
			}
		}
		return true
	}) {
		t.Fatal("children never exec'd sleep")
	}
	for i := range 3 {
		p, s := scan(t, parallel), scan(t, serial)
		// Other processes may come and go between the two scans; the
		// sleepers and this process may not.
		for _, want := range s.Procs {
			if want.PPID != os.Getpid() && want.PID != os.Getpid() {
				continue
			}
			got := p.Proc(want.PID)
			if got == nil || got.ID() != want.ID() || got.Comm != want.Comm || !slices.Equal(got.Argv, want.Argv) {
				t.Errorf("scan %d, pid %d: parallel %+v, serial %+v", i, want.PID, got, want)
			}
		}
		checkHeldCount(t, parallel)
	}
}

// statPath is <procRoot>/<pid>/stat, as the kernel reports the path of an
// open stat file.
func statPath(procRoot string, pid int) string {
	return filepath.Join(procRoot, strconv.Itoa(pid), "stat")
}

// TestSettleShedsEachDescriptorOnce: settle compacts the slots in place,
// so while it runs, the places between the kept slots and the slot at
// hand hold stale copies of slots already moved down or dropped. A shed
// there (the scan ran out of descriptors) must close each descriptor
// once, through the slot that owns it: closing a stale copy's would close
// a kept slot's descriptor under it, and that slot's own release would
// close the number again, perhaps someone else's by then.
func TestSettleShedsEachDescriptorOnce(t *testing.T) {
	startSleep(t, "settle")
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	scan(t, s)
	tb := &s.pids
	n := len(tb.slots)
	held := 0
	for _, sl := range tb.slots {
		if sl.fd >= 0 {
			held++
		}
	}
	if n < 4 || held != n {
		t.Fatalf("%d slots, %d holding a descriptor: want every one held", n, held)
	}
	// The first slot's process is gone (dropped), the next-to-last ran out
	// of descriptors: every slot between them is kept and moved down one
	// place, and the shed's batch reaches below the slot at hand.
	reads := make([]statRead, n)
	results := make([]readResult, n)
	for k, sl := range tb.slots {
		reads[k].st = pidStat{pid: sl.pid, start: sl.start, comm: sl.comm}
	}
	results[0] = readFailed
	results[n-2] = readNoFDs
	descriptors := map[int]int{} // fd -> pid, to check none is shared afterwards
	tb.settle(reads, results)
	for _, sl := range tb.slots {
		if sl.fd < 0 {
			continue
		}
		if pid, dup := descriptors[sl.fd]; dup {
			t.Errorf("pids %d and %d hold the same descriptor %d", pid, sl.pid, sl.fd)
		}
		descriptors[sl.fd] = sl.pid
		if _, err := unix.FcntlInt(uintptr(sl.fd), unix.F_GETFD, 0); err != nil {
			t.Errorf("pid %d holds descriptor %d, closed under it: %v", sl.pid, sl.fd, err)
		}
	}
	checkHeldCount(t, s)
}
