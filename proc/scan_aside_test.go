package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc/proctest"
)

// asideSlot is the scanner's slot of pid, or nil.
func asideSlot(s *Scanner, pid int) *pidSlot {
	for i := range s.pids.slots {
		if s.pids.slots[i].pid == pid {
			return &s.pids.slots[i]
		}
	}
	return nil
}

// pidfdOf reports whether this process's descriptor fd is a pidfd of pid.
func pidfdOf(fd, pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	return err == nil && strings.Contains(string(b), fmt.Sprintf("\nPid:\t%d\n", pid))
}

// TestScanCarriesAsideStats: the stat of a sleeping process aside is
// carried between its reads (one scan in reuseRounds) and the snapshot
// says so; its exit shows at the next scan, through the pidfd watching
// it; a stop shows within reuseRounds scans, and a process not asleep is
// read at every scan; the pidfd is closed when it is no longer aside.
func TestScanCarriesAsideStats(t *testing.T) {
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if s.pids.births.path == "" {
		proctest.SkipMissing(t, "/proc is not this pid namespace's")
	}
	// A worker that sleeps in read(2) and, for each line, burns CPU and
	// answers.
	cmd := exec.Command("/bin/sh", "-c", `while read x; do i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done; echo done; done`)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopChild(t, cmd) })
	out := bufio.NewReader(outPipe)
	pid := cmd.Process.Pid
	work := func() {
		t.Helper()
		if _, err := io.WriteString(in, "go\n"); err != nil {
			t.Fatal(err)
		}
		if _, err := out.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		proctest.Eventually(2*time.Second, func() bool { return procState(pid) == 'S' })
	}
	scan := func(h ScanHints) *Snapshot {
		t.Helper()
		snap, err := s.ScanWith(h)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Proc(pid) == nil {
			t.Fatalf("pid %d not in the snapshot", pid)
		}
		return snap
	}
	proctest.Eventually(2*time.Second, func() bool { return procState(pid) == 'S' })
	var first *Process
	for range 3 { // past a young process's second read
		first = scan(ScanHints{}).Proc(pid)
	}
	hints := ScanHints{Aside: map[Identity]bool{first.ID(): true}}
	if snap := scan(hints); snap.IsCarried(snap.Proc(pid)) {
		t.Fatal("carried at the scan that began to watch it")
	}
	pidfd := asideSlot(s, pid).pidfd
	if pidfd < 0 || !pidfdOf(pidfd, pid) {
		t.Fatalf("no pidfd held on pid %d aside (%d)", pid, pidfd)
	}

	// CPU used between reads is carried, then read within reuseRounds.
	carried, read := false, false
	for try := 0; try < 5 && !(carried && read); try++ {
		before := scan(hints).Proc(pid).CPUTicks
		work()
		carried, read = false, false
		for range reuseRounds {
			snap := scan(hints)
			p := snap.Proc(pid)
			switch {
			case snap.IsCarried(p) && p.CPUTicks == before:
				carried = true
			case !snap.IsCarried(p) && p.CPUTicks > before:
				read = true
			}
			if read {
				break
			}
		}
	}
	if !carried || !read {
		t.Fatalf("pid %d: carried %v, then read %v within %d scans", pid, carried, read, reuseRounds)
	}
	if snap := scan(hints); !slices.IsSorted(snap.Carried) {
		t.Errorf("Carried not ascending: %v", snap.Carried)
	}

	// Stopped, it shows within reuseRounds scans, and is read from then on.
	if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	proctest.Eventually(2*time.Second, func() bool { return procState(pid) == 'T' })
	shown := -1
	for i := range reuseRounds + 1 {
		if p := scan(hints).Proc(pid); p.State == 'T' {
			shown = i
			break
		}
	}
	if shown < 0 {
		t.Fatalf("pid %d stopped: not shown in %d scans", pid, reuseRounds+1)
	}
	for i := range reuseRounds {
		if snap := scan(hints); snap.IsCarried(snap.Proc(pid)) {
			t.Fatalf("stopped pid %d carried at scan %d", pid, i)
		}
	}
	if sl := asideSlot(s, pid); sl.pidfd >= 0 || pidfdOf(pidfd, pid) {
		t.Errorf("pidfd of a process read at every scan still held (%d)", sl.pidfd)
	}
	_ = unix.Kill(pid, unix.SIGCONT)
	proctest.Eventually(2*time.Second, func() bool { return procState(pid) == 'S' })
	for range 2 {
		scan(hints)
	}

	// Killed (and not reaped): the next scan shows the zombie.
	for range 2 * reuseRounds {
		if snap := scan(hints); snap.IsCarried(snap.Proc(pid)) {
			break
		}
	}
	if pidfd = asideSlot(s, pid).pidfd; pidfd < 0 {
		t.Fatalf("no pidfd on pid %d aside again", pid)
	}
	if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	proctest.Eventually(2*time.Second, func() bool { return procState(pid) == 'Z' })
	if p := scan(hints).Proc(pid); p.State != 'Z' {
		t.Fatalf("pid %d killed: the next scan shows state %c", pid, p.State)
	}
	stopChild(t, cmd)
	if snap, err := s.ScanWith(hints); err != nil || snap.Proc(pid) != nil {
		t.Fatalf("pid %d reaped, still in the snapshot (%v)", pid, err)
	}
	if pidfdOf(pidfd, pid) {
		t.Errorf("pidfd %d of pid %d still open after its exit", pidfd, pid)
	}
}
