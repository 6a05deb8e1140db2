package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc/proctest"
)

// quietCgroup makes a cgroup v2 directory of the test's own, removed at
// the end, and returns its directory.
func quietCgroup(t *testing.T, name string) string {
	t.Helper()
	proctest.RequireRoot(t)
	mounts, err := readMounts("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if mounts.Unified == "" {
		proctest.SkipMissing(t, "no cgroup2 mount")
	}
	dir := mounts.V2Dir(fmt.Sprintf("/sandtop-reuse-%s-%d", name, os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroup(t, dir) })
	return dir
}

// reusedPID reports whether the scanner's last scan reused pid's stat.
func reusedPID(s *Scanner, pid int) bool {
	for _, sl := range s.pids.slots {
		if sl.pid == pid {
			return sl.reuse
		}
	}
	return false
}

// reusingScanner moves pid into the cgroup dir and returns a scanner that
// has just reused its stat.
func reusingScanner(t *testing.T, dir string, pid int) *Scanner {
	t.Helper()
	writeFile(t, filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid))
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	scanUntilReused(t, s, pid)
	return s
}

// scanUntilReused scans until the stat of pid is reused (its cgroup is
// quiet for two scan starts, and the round that reads it anyway is not
// this one), and fails after 20 scans.
func scanUntilReused(t *testing.T, s *Scanner, pid int) {
	t.Helper()
	for range 20 {
		if _, err := s.Scan(); err != nil {
			t.Fatal(err)
		}
		if reusedPID(s, pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pid %d: stat never reused in 20 scans of its idle cgroup", pid)
}

// TestScanReusesStatsOfQuietCgroups: a process alone in a cgroup that does
// not run has its stat reused, and whatever it does next (stop, continue,
// exit) shows by the next scan or the one after.
func TestScanReusesStatsOfQuietCgroups(t *testing.T) {
	dir := quietCgroup(t, "state")
	cmd := startSleep(t)
	pid := cmd.Process.Pid
	s := reusingScanner(t, dir, pid)
	// A process that vanished while its new entry was read costs a stat
	// read more (sameProcess): on a host where other tests run, a scan
	// may have had one, so a few are tried.
	for try := 0; s.reads.stat >= len(s.pids.slots); try++ {
		if try == 5 {
			t.Fatalf("scans that reused a stat counted %d stat reads for %d processes", s.reads.stat, len(s.pids.slots))
		}
		scanUntilReused(t, s, pid)
	}

	state := func(want byte) {
		t.Helper()
		var got byte
		for i := range 2 {
			snap, err := s.Scan()
			if err != nil {
				t.Fatal(err)
			}
			if p := snap.Proc(pid); p != nil {
				got = p.State
			} else {
				got = '-'
			}
			if got == want {
				if i > 0 {
					t.Logf("state %c shown one scan late", want)
				}
				return
			}
		}
		t.Fatalf("pid %d: state %c two scans after the change, want %c", pid, got, want)
	}
	for _, step := range []struct {
		sig  unix.Signal
		want byte
	}{{unix.SIGSTOP, 'T'}, {unix.SIGCONT, 'S'}} {
		if err := cmd.Process.Signal(step.sig); err != nil {
			t.Fatal(err)
		}
		// The signal is handled by the time the state reads so.
		proctest.Eventually(2*time.Second, func() bool { return procState(pid) == step.want })
		state(step.want)
		scanUntilReused(t, s, pid)
	}
	if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	proctest.Eventually(2*time.Second, func() bool { return procState(pid) == 'Z' })
	state('Z')
	_ = cmd.Wait()
	state('-')
}

// TestScanReusedStatFollowsReparenting: a process that does not run is
// reparented when its parent dies, without running; the next scan must
// show its new parent, not the reused stat's, even while the dead parent
// lingers as a zombie with the same identity.
func TestScanReusedStatFollowsReparenting(t *testing.T) {
	dir := quietCgroup(t, "orphan")
	// The test process adopts the orphan, so it can reap it.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	parent := exec.Command("sh", "-c", "sleep 300 & echo $!; wait")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = parent.Process.Kill()
		_ = parent.Wait()
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	// Pinned before anything can reap it, so the cleanup signals only it.
	pidfd, err := unix.PidfdOpen(child, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = parent.Process.Kill() // our own child, by its handle
		_ = parent.Wait()
		_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		var ws unix.WaitStatus
		_, _ = unix.Wait4(child, &ws, 0, nil)
		unix.Close(pidfd)
	})
	s := reusingScanner(t, dir, child)
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !proctest.Eventually(5*time.Second, func() bool { return procState(parent.Process.Pid) == 'Z' }) {
		t.Fatalf("parent %d never became a zombie", parent.Process.Pid)
	}
	for _, when := range []string{"its parent a zombie", "its parent reaped"} {
		snap, err := s.Scan()
		if err != nil {
			t.Fatal(err)
		}
		p := snap.Proc(child)
		if p == nil {
			t.Fatalf("pid %d gone from the scan", child)
		}
		if p.PPID != os.Getpid() {
			t.Errorf("orphan %d, %s: ppid %d, want %d (the subreaper)", child, when, p.PPID, os.Getpid())
		}
		_ = parent.Wait()
		scanUntilReused(t, s, child)
	}
}

// procState reads the state letter of pid from /proc, or '-'.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return '-'
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return '-'
	}
	return s[i+2]
}

// TestScanProbesNewPIDs: between listings, a scan finds a new process by
// the pids handed out since the last one, and never takes a new thread
// (reachable as /proc/TID too) for a process.
func TestScanProbesNewPIDs(t *testing.T) {
	proctest.RequireRoot(t)
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if s.pids.births.path == "" {
		proctest.SkipMissing(t, "/proc is not this pid namespace's")
	}
	for range 2 {
		if _, err := s.Scan(); err != nil {
			t.Fatal(err)
		}
	}
	// New threads of this process: locked goroutines blocked in a system
	// call each need a thread of their own.
	release := make(chan struct{})
	var started sync.WaitGroup
	for range 4 {
		started.Add(1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			started.Done()
			<-release
		}()
	}
	started.Wait()
	defer close(release)
	cmd := startSleep(t)
	snap, err := s.Scan()
	if err != nil {
		t.Fatal(err)
	}
	from, to, ok := s.pids.births.span()
	probed := ok && to-from <= maxProbed && s.reads.list == 0
	t.Logf("pids %d..%d handed out since the last scan; listed %d", from+1, to, s.reads.list)
	if p := snap.Proc(cmd.Process.Pid); p == nil || p.Comm != "sleep" {
		t.Errorf("the new child %d is not in the scan (%+v)", cmd.Process.Pid, p)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if tid != os.Getpid() && snap.Proc(tid) != nil {
			t.Errorf("thread %d of this process is in the scan as a process", tid)
		}
	}
	if ok && to-from <= maxProbed && !probed {
		t.Errorf("%d pids handed out, and the scan listed /proc anyway", to-from)
	}
	// The listing still comes round.
	listed := false
	for range listEvery + 1 {
		if _, err := s.Scan(); err != nil {
			t.Fatal(err)
		}
		listed = listed || s.reads.list > 0
	}
	if !listed {
		t.Errorf("no listing of /proc in %d scans", listEvery+1)
	}
}

// TestScanNoticesMoveOutOfQuietCgroup: a runtime moves what it starts into
// the container's cgroup, so a process may run in a cgroup other than the
// one the scanner cached for it. Moved right after its first scan, the
// next one shows its new cgroup; moved out of a quiet cgroup later, it
// keeps a reused stat for at most reuseRounds scans, and then shows its
// new cgroup.
func TestScanNoticesMoveOutOfQuietCgroup(t *testing.T) {
	from, to := quietCgroup(t, "from"), quietCgroup(t, "to")
	pid := startSleep(t).Process.Pid
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cgroupOf := func() string {
		t.Helper()
		snap, err := s.Scan()
		if err != nil {
			t.Fatal(err)
		}
		if p := snap.Proc(pid); p != nil {
			return p.Cgroup
		}
		return "(gone)"
	}
	first := cgroupOf()
	writeFile(t, filepath.Join(from, "cgroup.procs"), strconv.Itoa(pid))
	if got, want := cgroupOf(), "/"+filepath.Base(from); got != want {
		t.Fatalf("moved after its first scan (from %s): cgroup %s on the next, want %s", first, got, want)
	}
	scanUntilReused(t, s, pid)
	writeFile(t, filepath.Join(to, "cgroup.procs"), strconv.Itoa(pid))
	want := "/" + filepath.Base(to)
	for i := range reuseRounds + 1 {
		if got := cgroupOf(); got == want {
			t.Logf("the move out of a quiet cgroup showed %d scans later", i+1)
			return
		}
	}
	t.Fatalf("moved out of a quiet cgroup: still not in %s after %d scans", want, reuseRounds+1)
}

// TestStatOfRebuildsTheProcess checks that the stat a reuse rebuilds from a
// Process (statOf) makes that same Process again, for every process of the
// live host: a field statOf forgot would hand a reused process a zero.
func TestStatOfRebuildsTheProcess(t *testing.T) {
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap := scan(t, s)
	for _, p := range snap.Procs {
		st := statOf(p, 0, snap.PageSize)
		var again Process
		setStatic(&again, new(staticOf(p)))
		setStat(&again, &st, p.Kernel, snap.PageSize)
		if !sameStat(p, &st, p.Kernel, snap.PageSize) || !reflect.DeepEqual(&again, p) {
			t.Fatalf("pid %d: rebuilt as %+v, was %+v", p.PID, again, *p)
		}
	}
}

// TestScanSettledCgroupSkipsDueReads: while a front end settles a quiet
// cgroup, its process's stat is reused at every scan, the scans that
// would read it anyway included; the first scan that does not settle it
// reads it, and what the process does (stop) shows while settled too.
func TestScanSettledCgroupSkipsDueReads(t *testing.T) {
	dir := quietCgroup(t, "settled")
	cmd := startSleep(t)
	pid := cmd.Process.Pid
	s := reusingScanner(t, dir, pid)
	rel := "/" + filepath.Base(dir)
	if p, err := s.Scan(); err != nil || p.Proc(pid) == nil || p.Proc(pid).Cgroup != rel {
		t.Fatalf("pid %d not seen in cgroup %s (%v)", pid, rel, err)
	}
	hints := ScanHints{Settled: map[string]bool{rel: true}}
	scan := func(h ScanHints) *Snapshot {
		t.Helper()
		snap, err := s.ScanWith(h)
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	// Unsettled, the process is read within reuseRounds scans.
	read := false
	for range reuseRounds {
		scan(ScanHints{})
		read = read || !reusedPID(s, pid)
	}
	if !read {
		t.Fatalf("pid %d: not read once in %d scans of its quiet cgroup", pid, reuseRounds)
	}
	scanUntilReused(t, s, pid)
	for i := range 2 * reuseRounds {
		scan(hints)
		if !reusedPID(s, pid) {
			// Only activity in the cgroup may cause a read: the sleep
			// does not run, so it is a test of ours that did.
			t.Fatalf("settled scan %d read pid %d's stat", i, pid)
		}
	}
	scan(ScanHints{})
	if reusedPID(s, pid) {
		t.Errorf("pid %d: its stat, due while settled, was reused by the first scan not settling it", pid)
	}

	scanUntilReused(t, s, pid)
	if err := cmd.Process.Signal(unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	proctest.Eventually(2*time.Second, func() bool { return procState(pid) == 'T' })
	for i := 0; ; i++ {
		if p := scan(hints).Proc(pid); p != nil && p.State == 'T' {
			break
		}
		if i == 1 {
			t.Fatalf("settled: pid %d stopped, not shown so two scans later", pid)
		}
	}
	_ = cmd.Process.Signal(unix.SIGCONT)
}

// TestScanFreezeOfQuietCgroupShows: a cgroup whose tasks do not run keeps
// the state the scan read last, and a freeze or thaw (which runs its
// tasks) shows by the next scan or the one after.
func TestScanFreezeOfQuietCgroupShows(t *testing.T) {
	dir := quietCgroup(t, "freeze")
	if _, err := os.Stat(filepath.Join(dir, "cgroup.freeze")); err != nil {
		proctest.SkipMissing(t, "no cgroup.freeze (kernel before 5.2)")
	}
	cmd := startSleep(t)
	pid := cmd.Process.Pid
	s := reusingScanner(t, dir, pid)
	rel := "/" + filepath.Base(dir)
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte("0"), 0o644) })
	for _, frozen := range []bool{true, false, true, false} {
		for i := range 4 {
			// Quiet scans: the state stays what it was.
			snap, err := s.Scan()
			if err != nil {
				t.Fatal(err)
			}
			if got := snap.Cgroups[rel].Frozen; got == frozen {
				t.Fatalf("scan %d before the change: frozen %v already", i, got)
			}
		}
		v := "0"
		if frozen {
			v = "1"
		}
		ran := usageUsec(t, dir)
		writeFile(t, filepath.Join(dir, "cgroup.freeze"), v)
		// cgroup.events says "frozen 0" as soon as the thaw is written,
		// before the task has run out of the freezer; the scan sees the
		// change once it has, by what it was charged for it.
		proctest.Eventually(2*time.Second, func() bool {
			b, _ := os.ReadFile(filepath.Join(dir, "cgroup.events"))
			return strings.Contains(string(b), "frozen "+v) && usageUsec(t, dir) > ran
		})
		for i := 0; ; i++ {
			snap, err := s.Scan()
			if err != nil {
				t.Fatal(err)
			}
			if snap.Cgroups[rel].Frozen == frozen {
				break
			}
			if i == 1 {
				t.Fatalf("cgroup frozen %v, not shown so two scans later", frozen)
			}
		}
	}
}

// TestScanReadsQuietParentFirst: of cgroups that share a parent, the
// parent's cpu.stat is read first, and while it is quiet the children's
// are not read, their processes' stats reused all the same; a child whose
// process runs is not taken as quiet.
func TestScanReadsQuietParentFirst(t *testing.T) {
	parent := quietCgroup(t, "parent")
	// Cleanups run last first: each sleep stops before its cgroup goes,
	// and the children's cgroups before the parent's.
	var cmds []*exec.Cmd
	for i := range minParentOf + 1 {
		dir := filepath.Join(parent, fmt.Sprintf("c%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { removeCgroup(t, dir) })
		cmd := startSleep(t)
		writeFile(t, filepath.Join(dir, "cgroup.procs"), strconv.Itoa(cmd.Process.Pid))
		cmds = append(cmds, cmd)
	}
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	last := cmds[len(cmds)-1].Process.Pid
	scanUntilReused(t, s, last)
	rel := "/" + filepath.Base(parent)
	g := s.cpu.parents[rel]
	if g == nil {
		t.Fatalf("parent %s of %d followed cgroups not read first (parents %v)", rel, len(cmds), s.cpu.parents)
	}
	// A scan in which the parent stays quiet reads none of its children.
	for try := 0; ; try++ {
		before := s.cpu.usageReads
		if _, err := s.Scan(); err != nil {
			t.Fatal(err)
		}
		if g.quiet {
			if n, most := s.cpu.usageReads-before, len(s.cpu.files)-len(cmds)+len(s.cpu.order); n > most {
				t.Errorf("quiet parent: %d cpu.stat reads, want at most %d (its %d children unread)", n, most, len(cmds))
			}
			if !reusedPID(s, last) && (uint(last)+s.pids.scans)%reuseRounds != 0 {
				t.Errorf("quiet parent: pid %d's stat read", last)
			}
			break
		}
		if try == 10 {
			t.Fatal("the parent never quiet in 10 scans")
		}
	}
	// A parent whose descriptor stops reading (its cgroup removed and
	// made again) is opened afresh.
	gone := quietCgroup(t, "gone")
	fd, err := openCgroup2(filepath.Join(gone, "cpu.stat"))
	if err != nil {
		t.Fatal(err)
	}
	removeCgroup(t, gone)
	unix.Close(g.fd)
	g.fd = fd
	for i := range 2 {
		if _, err := s.Scan(); err != nil {
			t.Fatal(err)
		}
		if again := s.cpu.parents[rel]; i == 1 && (again == nil || again == g || again.fd < 0) {
			t.Fatalf("after its descriptor failed, the parent is %+v", again)
		}
	}
	checkHeldCount(t, s)
	// A child whose process runs is busy, and so is its parent.
	if err := cmds[0].Process.Signal(unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	proctest.Eventually(2*time.Second, func() bool { return procState(cmds[0].Process.Pid) == 'T' })
	snap, err := s.Scan()
	if err != nil {
		t.Fatal(err)
	}
	if _, quiet := s.cpu.quiet["/"+filepath.Base(parent)+"/c0"]; quiet || snap.Proc(cmds[0].Process.Pid).State != 'T' {
		t.Errorf("a stopped child: quiet %v, state %c", quiet, snap.Proc(cmds[0].Process.Pid).State)
	}
	_ = cmds[0].Process.Signal(unix.SIGCONT)
}

// usageUsec is the v2 cgroup dir's usage_usec: the CPU time its tasks
// were charged.
func usageUsec(t *testing.T, dir string) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "usage_usec "); ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("%s/cpu.stat has no usage_usec", dir)
	return 0
}
