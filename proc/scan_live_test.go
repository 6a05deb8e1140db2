package proc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandtop/sandtop/proc/proctest"
)

// scanAsEnv makes the test binary scan /proc, print a scanReport as JSON and
// exit, instead of running the tests; TestScanUnprivileged runs it as nobody.
const scanAsEnv = "SANDTOP_PROC_TEST_SCAN_REPORT"

func TestMain(m *testing.M) {
	if os.Getenv(scanAsEnv) == "1" {
		os.Exit(reportScan(os.Stdout))
	}
	// Each test's scanner counts its own descriptors (checkHeldCount).
	scannerFDs = newFDBudget
	code := m.Run()
	for _, fn := range afterTests {
		if err := fn(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

type scanReport struct {
	UID, Procs, PartlyUnreadable int
	Self                         reportedProc
	// Others are the root-owned user-space processes other than the reporter.
	Others []reportedProc
}

type reportedProc struct {
	PID              int
	Exe, Cwd         string
	Partial, HasArgv bool
}

func reportScan(w io.Writer) int {
	s, err := NewScanner(Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	snap, err := s.Scan()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r := scanReport{UID: os.Getuid(), Procs: len(snap.Procs), PartlyUnreadable: snap.PartlyUnreadable}
	for _, p := range snap.Procs {
		rp := reportedProc{PID: p.PID, Exe: p.Exe, Cwd: p.Cwd, Partial: p.Partial, HasArgv: len(p.Argv) > 0}
		switch {
		case p.PID == snap.Self:
			r.Self = rp
		case p.UID == 0 && !p.Kernel && !p.Zombie():
			r.Others = append(r.Others, rp)
		}
	}
	if err := json.NewEncoder(w).Encode(r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestScanLiveChildren(t *testing.T) {
	dir := t.TempDir()
	before := time.Now()
	sleeper := exec.Command("/bin/sleep", "1000")
	sleeper.Args[0] = "odd argv0 \xff"
	sleeper.Dir = dir
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopChild(t, sleeper) })
	stopped := startSleep(t)
	if err := stopped.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	after := time.Now()

	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A child may still be between fork and exec, or not yet asleep: wait
	// until both settle.
	var snap *Snapshot
	settled := func() bool {
		snap = scan(t, s)
		p, q := snap.Proc(sleeper.Process.Pid), snap.Proc(stopped.Process.Pid)
		return p != nil && p.State == 'S' && p.Comm == "sleep" && q != nil && q.State == 'T'
	}
	if !proctest.Eventually(5*time.Second, settled) {
		t.Fatalf("children did not settle: %+v %+v", snap.Proc(sleeper.Process.Pid), snap.Proc(stopped.Process.Pid))
	}
	self := snap.Proc(os.Getpid())
	if self == nil || snap.Self != os.Getpid() {
		t.Fatalf("the test process %d is not in the snapshot (Self = %d)", os.Getpid(), snap.Self)
	}

	p := snap.Proc(sleeper.Process.Pid)
	exe, _ := filepath.EvalSymlinks("/bin/sleep")
	cwd, _ := filepath.EvalSymlinks(dir)
	checks := []struct {
		name      string
		got, want any
	}{
		{"PPID", p.PPID, os.Getpid()},
		{"Argv", strings.Join(p.Argv, "|"), "odd argv0 \xff|1000"},
		{"Exe", p.Exe, exe},
		{"Cwd", p.Cwd, cwd},
		{"UID", p.UID, os.Getuid()},
		{"Cgroup (inherited)", p.Cgroup, self.Cgroup},
		{"Freezer (inherited)", p.Freezer, self.Freezer},
		{"Kernel", p.Kernel, false},
		{"Partial", p.Partial, false},
		{"Threads", p.Threads, 1},
		{"RSS > 0", p.RSS > 0, true},
		{"NSpid", fmt.Sprint(p.NSpid), fmt.Sprint([]int{p.PID})},
		{"Stopped()", snap.Proc(stopped.Process.Pid).Stopped(), true},
	}
	for _, c := range checks {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s = %q, want %q", c.name, fmt.Sprint(c.got), fmt.Sprint(c.want))
		}
	}
	// Start is in ticks after boot, btime in whole seconds: allow for both.
	started := snap.StartTime(p)
	if started.Before(before.Add(-1100*time.Millisecond)) || started.After(after.Add(1100*time.Millisecond)) {
		t.Errorf("StartTime = %v, want between %v and %v", started, before, after)
	}
	id, state, err := ReadIdentity("/proc", p.PID)
	if err != nil || id != p.ID() || state != 'S' {
		t.Errorf("ReadIdentity = %v %c %v, want %v S", id, state, err, p.ID())
	}
	fresh, err := readProcess("/proc", p.PID)
	if err != nil || !slices.Equal(fresh.Argv, p.Argv) || fresh.Cgroup != p.Cgroup || fresh.Exe != p.Exe {
		t.Errorf("readProcess = %+v, %v; want the scanned %+v", fresh, err, p)
	}
	if snap.Proc(2) != nil && !snap.Proc(2).Kernel {
		t.Errorf("pid 2 (%s) not a kernel thread", snap.Proc(2).Comm)
	}
}

// TestScanLiveCache checks on the real /proc that a refresh re-uses the
// cached fields of known identities and reads no static file for them, and
// that an exited child leaves the cache.
func TestScanLiveCache(t *testing.T) {
	child := startSleep(t, "cache-me")
	pid := child.Process.Pid
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var first *Snapshot
	if !proctest.Eventually(5*time.Second, func() bool {
		first = scan(t, s)
		p := first.Proc(pid)
		return p != nil && slices.Contains(p.Argv, "cache-me")
	}) {
		t.Fatalf("child %d never showed its argv", pid)
	}
	second := scan(t, s)
	p1, p2 := first.Proc(pid), second.Proc(pid)
	// A sleeping child's stat does not change between two quick scans, so
	// its *Process is shared; if it did change (it was scheduled), the
	// Process must be fresh and the old one untouched.
	switch {
	case p2 == nil || &p1.Argv[0] != &p2.Argv[0]:
		t.Fatalf("refresh: want the child with the cached argv; got %p/%p", p1, p2)
	case p1 == p2:
	case reflect.DeepEqual(*p1, *p2):
		t.Errorf("refresh: a fresh *Process for an unchanged child (%+v), want the previous one shared", *p2)
	}
	shared := 0
	for _, p := range second.Procs {
		if first.Proc(p.PID) == p {
			shared++
		}
	}
	if shared == 0 {
		t.Errorf("refresh shared no *Process among %d processes; idle ones must be shared", len(second.Procs))
	}
	births := 0
	for _, p := range second.Procs {
		if q := first.Proc(p.PID); q == nil || q.ID() != p.ID() || q.Comm != p.Comm {
			births++
		}
	}
	// Each process born (or exec'd) in between costs at most one status read;
	// every known one costs none. On a busy host some are born after the
	// listing and gone before the snapshot: read, but in no snapshot.
	vanished := len(s.found) - len(second.Procs)
	if s.reads.status > births+vanished || s.reads.cmdline > births+vanished || s.reads.stat < len(second.Procs) {
		t.Errorf("refresh reads = %+v with %d births and %d vanished among %d processes; want stat for each and statics only for births",
			s.reads, births, vanished, len(second.Procs))
	}

	id := p1.ID()
	stopChild(t, child)
	third := scan(t, s)
	if p := third.Proc(pid); p != nil && p.ID() == id {
		t.Errorf("reaped child %v still in the snapshot", id)
	}
	if _, ok := s.cache.entries[id]; ok {
		t.Errorf("reaped child %v still cached", id)
	}
}

// TestScanLiveExecSameComm runs a shell that execs another shell: pid,
// start time and comm stay, only argv (and startcode) change. The refresh must
// still show the new argv.
func TestScanLiveExecSameComm(t *testing.T) {
	if aslr, err := os.ReadFile("/proc/sys/kernel/randomize_va_space"); err != nil || strings.TrimSpace(string(aslr)) == "0" {
		t.Skipf("ASLR is off (%q, %v): an exec of the same binary keeps startcode", aslr, err)
	}
	cmd := exec.Command("/bin/sh", "-c", "read line; exec /bin/sh -c 'read line' second-program", "first-program")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopChild(t, cmd); stdin.Close() })
	pid := cmd.Process.Pid
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	showing := func(arg string) func() bool {
		return func() bool {
			p := scan(t, s).Proc(pid)
			return p != nil && p.Comm == "sh" && slices.Contains(p.Argv, arg)
		}
	}
	if !proctest.Eventually(5*time.Second, showing("first-program")) {
		t.Fatalf("pid %d never showed the first program", pid)
	}
	id := scan(t, s).Proc(pid).ID()
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	if !proctest.Eventually(5*time.Second, showing("second-program")) {
		t.Fatalf("pid %d: scan still shows %q after the exec", pid, scan(t, s).Proc(pid).Argv)
	}
	if got := scan(t, s).Proc(pid).ID(); got != id {
		t.Errorf("identity changed across exec: %v -> %v", id, got)
	}
}

// TestScanLiveChurn scans while processes are born and die as fast as the
// machine can run /bin/true: no scan may fail, and a steady process must be
// read in full every time.
func TestScanLiveChurn(t *testing.T) {
	steady := startSleep(t, "steady")
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_ = exec.Command("/bin/true").Run()
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	hasArgv := func(p *Process) bool { return p != nil && slices.Contains(p.Argv, "steady") }
	if !proctest.Eventually(5*time.Second, func() bool { return hasArgv(scan(t, s).Proc(steady.Process.Pid)) }) {
		t.Fatalf("steady child %d never showed its argv", steady.Process.Pid)
	}
	for i := range 30 {
		snap := scan(t, s)
		p := snap.Proc(steady.Process.Pid)
		if !hasArgv(p) || p.Partial {
			t.Fatalf("scan %d: steady child = %+v", i, p)
		}
		if i%10 == 0 {
			s.Invalidate(p.ID()) // and re-read it in the middle of the churn
		}
	}
}

// TestScanLiveFrozenCgroup moves a child into a fresh cgroup, freezes and
// thaws it, and watches the scan follow: v2 through cgroup.freeze and
// cgroup.events, v1 through freezer.state.
func TestScanLiveFrozenCgroup(t *testing.T) {
	proctest.RequireRoot(t)
	mounts, err := readMounts("/proc")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		mount        string
		control      string // the file written to freeze and thaw
		freeze, thaw string
		path         func(*Process) string
		states       func(*Snapshot) map[string]CgroupState
		dirOf        func(string) string
	}{
		{
			name: "v2", mount: mounts.Unified,
			control: "cgroup.freeze", freeze: "1", thaw: "0",
			path:   func(p *Process) string { return p.Cgroup },
			states: func(s *Snapshot) map[string]CgroupState { return s.Cgroups },
			dirOf:  mounts.V2Dir,
		},
		{
			name: "v1 freezer", mount: mounts.Freezer,
			control: "freezer.state", freeze: "FROZEN", thaw: "THAWED",
			path:   func(p *Process) string { return p.Freezer },
			states: func(s *Snapshot) map[string]CgroupState { return s.Freezers },
			dirOf:  mounts.FreezerDir,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// cgroup2 is on every host CI runs on; the v1 freezer is not
			// on a pure v2 host.
			skip := t.Skipf
			if tt.name == "v2" {
				skip = func(format string, args ...any) { proctest.SkipMissing(t, format, args...) }
			}
			if tt.mount == "" {
				skip("no %s hierarchy mounted on this host", tt.name)
			}
			dir := filepath.Join(tt.mount, fmt.Sprintf("sandtop-proc-test-%d", os.Getpid()))
			if err := os.Mkdir(dir, 0o755); err != nil {
				skip("cannot create a cgroup under %s: %v", tt.mount, err)
			}
			t.Cleanup(func() { removeCgroup(t, dir) })
			if _, err := os.Stat(filepath.Join(dir, tt.control)); err != nil {
				skip("no %s in a fresh cgroup (kernel too old?): %v", tt.control, err)
			}
			child := startSleep(t, "in-cgroup")
			pid := child.Process.Pid
			t.Cleanup(func() { writeFile(t, filepath.Join(dir, tt.control), tt.thaw) })

			s, err := NewScanner(Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			before := tt.path(scan(t, s).Proc(pid))
			// A young process's cgroup is read again on its second scan
			// (cacheEntry.young); past that, a move goes unseen.
			scan(t, s)
			writeFile(t, filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid))

			// The cache keeps the old path until told: the documented trade-off.
			p := scan(t, s).Proc(pid)
			if got := tt.path(p); got != before {
				t.Errorf("cached path after migration = %q, want the stale %q", got, before)
			}
			s.Invalidate(p.ID())
			snap := scan(t, s)
			path := tt.path(snap.Proc(pid))
			if tt.dirOf(path) != dir {
				t.Fatalf("after Invalidate: path %q maps to %q, want %q", path, tt.dirOf(path), dir)
			}
			if st := tt.states(snap)[path]; !st.Exists || !st.Populated || st.Frozen {
				t.Errorf("state before freezing = %+v, want existing, populated, not frozen", st)
			}
			if pids, err := ReadCgroupProcs(dir); err != nil || !slices.Equal(pids, []int{pid}) {
				t.Errorf("ReadCgroupProcs = %v, %v; want [%d]", pids, err, pid)
			}

			writeFile(t, filepath.Join(dir, tt.control), tt.freeze)
			if !proctest.Eventually(5*time.Second, func() bool { return tt.states(scan(t, s))[path].Frozen }) {
				t.Fatalf("scan never showed %s frozen", path)
			}
			writeFile(t, filepath.Join(dir, tt.control), tt.thaw)
			if !proctest.Eventually(5*time.Second, func() bool { return !tt.states(scan(t, s))[path].Frozen }) {
				t.Fatalf("scan never showed %s thawed", path)
			}
		})
	}
}

// TestScanUnprivileged re-runs the test binary as nobody to scan /proc and
// checks that the scan completes, that root's processes lose exactly their
// exe and cwd (ptrace access, proc(5)), and that this shows in Partial.
func TestScanUnprivileged(t *testing.T) {
	proctest.RequireRoot(t)
	bin := proctest.NobodyBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), scanAsEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scan as nobody: %v\n%s", err, stderr.String())
	}
	var r scanReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	if r.UID != 65534 || r.Procs == 0 {
		t.Fatalf("report = %+v, want a scan by uid 65534 that found processes", r)
	}
	if r.Self.Exe == "" || r.Self.Partial || !r.Self.HasArgv {
		t.Errorf("its own process = %+v, want exe and argv read in full", r.Self)
	}
	if len(r.Others) == 0 {
		t.Fatalf("no root-owned process seen; cannot check permissions")
	}
	for _, p := range r.Others {
		if !p.HasArgv {
			// A process on its way out has released its memory and shows
			// an empty cmdline to anyone (proc(5)); on a host where other
			// work forks and exits, the scan meets some. Gone now, it says
			// nothing about what nobody may read.
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", p.PID)); errors.Is(err, os.ErrNotExist) {
				continue
			}
		}
		if p.Exe != "" || p.Cwd != "" || !p.Partial || !p.HasArgv {
			t.Errorf("root's pid %d as seen by nobody = %+v; want empty exe/cwd, Partial, argv still read", p.PID, p)
		}
	}
	if r.PartlyUnreadable < len(r.Others) {
		t.Errorf("PartlyUnreadable = %d, want at least the %d root processes", r.PartlyUnreadable, len(r.Others))
	}
}

func writeFile(t *testing.T, path, value string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		t.Errorf("write %q to %s: %v", value, path, err)
	}
}

// removeCgroup removes a test cgroup once its processes are gone (rmdir
// fails with EBUSY until then).
func removeCgroup(t *testing.T, dir string) {
	t.Helper()
	var err error
	proctest.Eventually(5*time.Second, func() bool {
		err = os.Remove(dir)
		return err == nil || errors.Is(err, os.ErrNotExist)
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("remove cgroup %s: %v", dir, err)
	}
}
