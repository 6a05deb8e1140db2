package proc

import (
	"errors"
	"fmt"
	"github.com/sandtop/sandtop/proc/proctest"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

const (
	pfFlagsUser = 0x400100 // PF_FORKNOEXEC|PF_RANDOMIZE, as an ordinary process shows
	hostRoot    = "testdata/host"
)

// blankArgvs counts the live user processes of the host fixture whose argv
// is empty (pid 401, "blank"): the cache reads their cmdline again on every
// scan, in case the first read caught an execve (see scanCache).
const blankArgvs = 1

// static returns how many files other than stat were read.
func (c readCounts) static() int { return c.status + c.cmdline + c.cgroup + c.exe + c.cwd }

// statOnly reports whether a scan of the unchanged host fixture read
// nothing but stat, and the cmdline of each blank argv.
func statOnly(c readCounts) bool {
	return c.static() == blankArgvs && c.cmdline == blankArgvs
}

// newFixtureScanner scans a copy of the fixture tree under dir (dir/proc,
// dir/sys), with its links made (proctest.Fixture).
func newFixtureScanner(t *testing.T, dir string) *Scanner {
	t.Helper()
	return newRootScanner(t, proctest.Fixture(t, dir))
}

// newRootScanner scans the tree at root as it is.
func newRootScanner(t *testing.T, root string) *Scanner {
	t.Helper()
	s, err := NewScanner(Options{ProcRoot: filepath.Join(root, "proc"), SysRoot: root})
	if err != nil {
		t.Fatalf("NewScanner(%s): %v", root, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func scan(t *testing.T, s *Scanner) *Snapshot {
	t.Helper()
	snap, err := s.Scan()
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return snap
}

func TestScanFixtureHost(t *testing.T) {
	root := proctest.Fixture(t, hostRoot)
	s := newRootScanner(t, root)
	snap := scan(t, s)
	page := uint64(os.Getpagesize())

	want := []*Process{
		{PID: 1, PPID: 0, PGID: 1, SID: 1, State: 'S', Comm: "init", Argv: []string{"/sbin/init", "splash"},
			Exe: "/usr/lib/systemd/systemd", Cwd: "/", Start: 1, UID: 0, Threads: 1, RSS: 2000 * page,
			CPUTicks: 500, Flags: pfFlagsUser, Cgroup: "/init.scope", Freezer: "/", NSpid: []int{1}},
		{PID: 2, PGID: 2, SID: 2, State: 'S', Comm: "kthreadd", Start: 2, UID: 0, Threads: 1,
			Flags: 0x208040, Kernel: true},
		{PID: 3, PPID: 2, PGID: 3, SID: 3, State: 'I', Comm: "kworker/0:0-events", Start: 3, UID: 0, Threads: 1,
			Flags: 0x4208060, Kernel: true},
		// No PF_KTHREAD in its flags, but a child of kthreadd.
		{PID: 4, PPID: 2, PGID: 4, SID: 4, State: 'I', Comm: "rcu_gp", Start: 4, UID: 0, Threads: 1,
			Kernel: true},
		{PID: 100, PPID: 1, PGID: 100, SID: 100, State: 'S', Comm: "sandtop", Argv: []string{"sandtop", "watch"},
			Exe: "/usr/local/bin/sandtop", Cwd: "/root", Start: 5000, UID: 0, Threads: 6, RSS: 3000 * page,
			CPUTicks: 10, Flags: pfFlagsUser, Cgroup: "/user.slice", Freezer: "/", NSpid: []int{100}},
		{PID: 201, PPID: 100, PGID: 201, SID: 201, State: 'S', Comm: "(a) b)", Argv: []string{"./weird", "(a) b)"},
			Exe: "/tmp/weird (deleted)", Cwd: "/tmp", Start: 6000, UID: 0, Threads: 1, RSS: 100 * page,
			Flags: pfFlagsUser, Cgroup: "/user.slice", Freezer: "/", NSpid: []int{201}},
		{PID: 300, PPID: 1, PGID: 300, SID: 300, State: 'S', Comm: "runner",
			Argv: []string{"/usr/bin/runner", "--id", "box1"}, Exe: "/usr/bin/runner", Cwd: "/var/lib/runner",
			Start: 7000, UID: 0, Threads: 1, RSS: 100 * page, Flags: pfFlagsUser, Cgroup: "/sandboxes/box1",
			Freezer: "/box1", NSpid: []int{300}},
		{PID: 301, PPID: 300, PGID: 300, SID: 300, State: 'S', Comm: "firecracker",
			Argv: []string{"/usr/bin/firecracker", "--id", "box\xff\xfe1", "", "--no-api"},
			Exe:  "/usr/bin/firecracker", Cwd: "/var/lib/runner/box1", Start: 7010, UID: 1000, Threads: 4,
			RSS: 25600 * page, CPUTicks: 1801, Flags: pfFlagsUser, Cgroup: "/sandboxes/box1", Freezer: "/box1",
			NSpid: []int{301, 1}},
		// A zombie: no argv, exe or cwd, but its uid and cgroup are still there.
		{PID: 302, PPID: 300, PGID: 300, SID: 300, State: 'Z', Comm: "jailer", Start: 7020, UID: 1000,
			Threads: 1, Flags: pfFlagsUser, Cgroup: "/sandboxes/box1", Freezer: "/box1", NSpid: []int{302}},
		// Emptied its argv: nothing to read, and nothing wrong.
		{PID: 401, PPID: 1, PGID: 401, SID: 401, State: 'S', Comm: "blank", Exe: "/usr/bin/blank", Cwd: "/",
			Start: 8100, UID: 0, Threads: 1, RSS: 100 * page, Flags: pfFlagsUser, Cgroup: "/user.slice",
			Freezer: "/", NSpid: []int{401}},
		// Only stat exists: the rest is empty and the process is Partial.
		{PID: 400, PPID: 1, PGID: 400, SID: 400, State: 'S', Comm: "lonely", Start: 8000, UID: -1, Threads: 1,
			RSS: 100 * page, Flags: pfFlagsUser, Partial: true},
	}
	if len(snap.Procs) != len(want) {
		t.Errorf("got %d processes, want %d", len(snap.Procs), len(want))
	}
	for _, w := range want {
		t.Run(fmt.Sprintf("pid %d", w.PID), func(t *testing.T) {
			got := snap.Proc(w.PID)
			if got == nil {
				t.Fatalf("pid %d missing from snapshot", w.PID)
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("pid %d:\n got %+v\nwant %+v", w.PID, *got, *w)
			}
		})
	}
	if !slices.IsSortedFunc(snap.Procs, func(a, b *Process) int { return a.PID - b.PID }) {
		t.Errorf("Procs not sorted by pid")
	}

	wantCgroups := map[string]CgroupState{
		"/init.scope":     {Exists: true, Populated: true},
		"/user.slice":     {Exists: true, Populated: true},
		"/sandboxes/box1": {Exists: true, Populated: true, Frozen: true},
	}
	if !maps.Equal(snap.Cgroups, wantCgroups) {
		t.Errorf("Cgroups = %v, want %v", snap.Cgroups, wantCgroups)
	}
	wantFreezers := map[string]CgroupState{
		"/":     {Exists: true, Populated: true}, // the root has no freezer.state
		"/box1": {Exists: true, Populated: true, Frozen: true},
	}
	if !maps.Equal(snap.Freezers, wantFreezers) {
		t.Errorf("Freezers = %v, want %v", snap.Freezers, wantFreezers)
	}
	wantListeners := map[string]bool{"/run/box1/firecracker.sock": true, "/run/with space.sock": true, "@abstract-box1": true}
	if !maps.Equal(snap.Listeners, wantListeners) {
		t.Errorf("Listeners = %v, want %v", snap.Listeners, wantListeners)
	}
	wantMounts := Mounts{
		Unified: filepath.Join(root, "sys/fs/cgroup/unified"), UnifiedRoot: "/",
		Freezer: filepath.Join(root, "sys/fs/cgroup/freezer"), FreezerRoot: "/",
		V1: V1Mounts{
			Memory: filepath.Join(root, "sys/fs/cgroup/memory"), PIDs: filepath.Join(root, "sys/fs/cgroup/pids"),
			CPU: filepath.Join(root, "sys/fs/cgroup/cpu,cpuacct"), CPUAcct: filepath.Join(root, "sys/fs/cgroup/cpu,cpuacct"),
		},
	}
	if snap.Mounts != wantMounts || s.Mounts() != wantMounts {
		t.Errorf("Mounts = %+v (scanner %+v), want %+v", snap.Mounts, s.Mounts(), wantMounts)
	}
	for name, c := range map[string]struct{ got, want any }{
		"PartlyUnreadable": {snap.PartlyUnreadable, 1},
		"Self":             {snap.Self, 100},
		"Hostname":         {snap.Hostname, "fixture-host"},
		"BootTime":         {snap.BootTime, time.Unix(1700000000, 0)},
		"ClockTicks":       {snap.ClockTicks, uint64(100)},
		"PageSize":         {snap.PageSize, page},
		"StartTime(300)":   {snap.StartTime(snap.Proc(300)), time.Unix(1700000070, 0)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}
}

func TestScanFixtureNoCgroup2(t *testing.T) {
	s := newFixtureScanner(t, "testdata/v1only")
	snap := scan(t, s)
	if len(snap.Procs) != 2 {
		t.Fatalf("got %d processes, want 2", len(snap.Procs))
	}
	for _, p := range snap.Procs {
		// Every process shows "0::/", but there is no cgroup2 mount to make sense of it.
		if p.Cgroup != "" {
			t.Errorf("pid %d: Cgroup = %q, want empty without a cgroup2 mount", p.PID, p.Cgroup)
		}
	}
	if got := snap.Proc(10).Freezer; got != "/paused" {
		t.Errorf("pid 10 Freezer = %q, want /paused", got)
	}
	if len(snap.Cgroups) != 0 {
		t.Errorf("Cgroups = %v, want none", snap.Cgroups)
	}
	want := map[string]CgroupState{"/": {Exists: true, Populated: true}, "/paused": {Exists: true, Populated: true, Frozen: true}}
	if !maps.Equal(snap.Freezers, want) {
		t.Errorf("Freezers = %v, want %v", snap.Freezers, want)
	}
	if snap.Mounts.Unified != "" || snap.Mounts.V2Dir("/") != "" {
		t.Errorf("Mounts = %+v, want no unified mount", snap.Mounts)
	}
	if len(snap.Listeners) != 0 {
		t.Errorf("Listeners = %v, want none (no net/unix)", snap.Listeners)
	}
	if snap.Self != 10 || snap.Hostname != "old-host" {
		t.Errorf("Self, Hostname = %d, %q; want 10, old-host", snap.Self, snap.Hostname)
	}
}

// TestScanVanished removes processes at the two moments a scan can lose
// them: before their stat is read, and after it (while the static fields are
// read). Either way the process is left out silently.
func TestScanVanished(t *testing.T) {
	tests := []struct {
		name string
		// prepare changes the copied tree before the scan; vanish runs mid-scan.
		prepare, vanish func(root string) error
		gone            int
		wantProcs       int
	}{
		{
			name:    "directory without stat (exited after readdir)",
			prepare: func(root string) error { return os.Mkdir(filepath.Join(root, "proc", "555"), 0o755) },
			gone:    555,
			// All eleven fixture processes are still there.
			wantProcs: 11,
		},
		{
			name:      "exits after its stat was read",
			vanish:    func(root string) error { return os.RemoveAll(filepath.Join(root, "proc", "301")) },
			gone:      301,
			wantProcs: 10,
		},
		{
			name: "pid reused after its stat was read",
			vanish: func(root string) error {
				// The new process behind pid 301 has a later start time and no other files yet.
				dir := filepath.Join(root, "proc", "301")
				if err := os.RemoveAll(dir); err != nil {
					return err
				}
				return fakeStat{pid: 301, ppid: 1, comm: "firecracker", state: 'R', start: 9999}.write(dir)
			},
			gone:      301,
			wantProcs: 10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := proctest.Fixture(t, hostRoot)
			if tt.prepare != nil {
				if err := tt.prepare(root); err != nil {
					t.Fatal(err)
				}
			}
			s := newRootScanner(t, root)
			if tt.vanish != nil {
				s.testHookAfterStat = func() {
					if err := tt.vanish(root); err != nil {
						t.Error(err)
					}
				}
			}
			snap := scan(t, s)
			if p := snap.Proc(tt.gone); p != nil {
				t.Errorf("pid %d in snapshot: %+v", tt.gone, *p)
			}
			if len(snap.Procs) != tt.wantProcs {
				t.Errorf("got %d processes, want the other %d kept", len(snap.Procs), tt.wantProcs)
			}
			if snap.PartlyUnreadable != 1 { // pid 400 only
				t.Errorf("PartlyUnreadable = %d, want 1", snap.PartlyUnreadable)
			}
			if s.cache.len() != len(snap.Procs) {
				t.Errorf("cache holds %d identities, want %d (none for the vanished one)", s.cache.len(), len(snap.Procs))
			}
		})
	}
}

// fakeStat is the part of /proc/PID/stat that tests vary.
type fakeStat struct {
	pid, ppid   int
	comm        string
	state       byte
	start, code uint64 // stat fields 22 (starttime) and 26 (startcode)
}

// write writes a complete /proc/PID/stat line (all 52 fields, proc(5)) into dir.
func (f fakeStat) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Fields 4 (ppid) to 26 (startcode), then zeros up to field 52.
	fields := []any{f.ppid, f.pid, f.pid, 0, -1, pfFlagsUser, 0, 0, 0, 0, 0, 0, 0, 0, 20, 0, 1, 0,
		f.start, 0, 0, 0, f.code}
	for len(fields) < 52-3 {
		fields = append(fields, 0)
	}
	line := fmt.Sprintf("%d (%s) %c", f.pid, f.comm, f.state)
	for _, v := range fields {
		line += fmt.Sprint(" ", v)
	}
	return os.WriteFile(filepath.Join(dir, "stat"), []byte(line+"\n"), 0o644)
}

// TestScanCacheFixture proves what a refresh reads: stat only for known
// identities, everything for a new or exec'd one, and nothing kept for the
// departed.
func TestScanCacheFixture(t *testing.T) {
	root := proctest.Fixture(t, hostRoot)
	runner := fakeStat{pid: 300, ppid: 1, comm: "runner", state: 'S', start: 7000, code: 0x55d0c8a00000}
	if err := runner.write(filepath.Join(root, "proc", "300")); err != nil {
		t.Fatal(err)
	}
	s := newRootScanner(t, root)
	first := scan(t, s)
	const pidDirs = 11
	// Cold: every stat, plus a second stat for pid 400 to tell its missing
	// files from an exit; cmdline, exe and cwd for the seven live user
	// processes; status and cgroup for those and the zombie; nothing more for
	// the three kernel threads.
	want := readCounts{stat: pidDirs + 1, status: 8, cmdline: 7, cgroup: 8, exe: 7, cwd: 7, list: 1}
	if s.reads != want {
		t.Errorf("cold scan reads = %+v, want %+v", s.reads, want)
	}

	t.Run("steady refresh reads stat only", func(t *testing.T) {
		second := scan(t, s)
		if s.reads.stat != pidDirs || !statOnly(s.reads) {
			t.Errorf("refresh reads = %+v, want %d stat reads and nothing else", s.reads, pidDirs)
		}
		for _, p := range first.Procs {
			q := second.Proc(p.PID)
			if q != p {
				t.Errorf("pid %d: unchanged process got a new *Process, want the previous one shared", p.PID)
			}
			if len(p.Argv) > 0 && &q.Argv[0] != &p.Argv[0] {
				t.Errorf("pid %d: argv was copied or re-read, want the cached slice", p.PID)
			}
			if !reflect.DeepEqual(p, q) {
				t.Errorf("pid %d changed between scans of an unchanged tree:\n%+v\n%+v", p.PID, *p, *q)
			}
		}
	})

	t.Run("a changed process is fresh, the unchanged shared", func(t *testing.T) {
		before := scan(t, s)
		busy := runner
		busy.state = 'R'
		if err := busy.write(filepath.Join(root, "proc", "300")); err != nil {
			t.Fatal(err)
		}
		after := scan(t, s)
		if !statOnly(s.reads) {
			t.Errorf("reads = %+v, want no static re-read for a state change", s.reads)
		}
		for _, p := range before.Procs {
			q := after.Proc(p.PID)
			switch {
			case p.PID == 300 && (q == p || q.State != 'R' || p.State != 'S'):
				t.Errorf("pid 300: %p state %c -> %p state %c, want a fresh *Process in state R and the old one left S",
					p, p.State, q, q.State)
			case p.PID != 300 && q != p:
				t.Errorf("pid %d: unchanged process got a new *Process", p.PID)
			}
		}
		if err := runner.write(filepath.Join(root, "proc", "300")); err != nil {
			t.Fatal(err)
		}
		if q := scan(t, s).Proc(300); q == after.Proc(300) || q.State != 'S' {
			t.Errorf("pid 300 back to S: got %p state %c, want a fresh *Process in state S", q, q.State)
		}
	})

	t.Run("exec changes comm and is re-read", func(t *testing.T) {
		dir := filepath.Join(root, "proc", "201")
		if err := (fakeStat{pid: 201, ppid: 100, comm: "sleep", state: 'S', start: 6000}).write(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte("sleep\x0010\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
		snap := scan(t, s)
		if got := snap.Proc(201).Argv; !slices.Equal(got, []string{"sleep", "10"}) {
			t.Errorf("argv after exec = %q, want [sleep 10]", got)
		}
		if s.reads.cmdline != 1+blankArgvs || s.reads.status != 1 {
			t.Errorf("reads = %+v, want the one exec'd process re-read", s.reads)
		}
	})

	t.Run("exec of a same-named program moves startcode and is re-read", func(t *testing.T) {
		dir := filepath.Join(root, "proc", "300")
		again := runner
		again.code = 0x5612aa400000
		if err := again.write(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte("runner\x00--id\x00box2\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := scan(t, s).Proc(300).Argv; !slices.Equal(got, []string{"runner", "--id", "box2"}) {
			t.Errorf("argv after exec = %q, want [runner --id box2]", got)
		}
	})

	t.Run("a zombie keeps its cached argv", func(t *testing.T) {
		// Exiting drops the process's memory: startcode reads 0 and cmdline
		// reads empty. Neither is an exec.
		dir := filepath.Join(root, "proc", "300")
		dead := runner
		dead.state, dead.code = 'Z', 0
		if err := dead.write(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		p := scan(t, s).Proc(300)
		if !p.Zombie() || !slices.Equal(p.Argv, []string{"runner", "--id", "box2"}) || !statOnly(s.reads) {
			t.Errorf("zombie 300 = state %c argv %q after %+v reads; want Z with the cached argv, no re-read",
				p.State, p.Argv, s.reads)
		}
	})

	t.Run("an argv read inside execve is read again until it arrives", func(t *testing.T) {
		// The kernel sets the new comm and memory map before it lays out
		// argv and sets startcode: a read in between sees comm already new,
		// cmdline empty and startcode 0, or 1 for a reader without ptrace
		// access. Neither sign of an exec moves when argv arrives.
		for _, tc := range []struct {
			name         string
			during, then uint64
		}{{"as root", 0, 0x55f3c1e00000}, {"without ptrace access", 1, 1}} {
			t.Run(tc.name, func(t *testing.T) {
				dir := filepath.Join(root, "proc", "201")
				start := 6100 + tc.during
				mid := fakeStat{pid: 201, ppid: 100, comm: "qemu-system-x86", state: 'R', start: start, code: tc.during}
				if err := mid.write(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "cmdline"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				if got := scan(t, s).Proc(201).Argv; got != nil {
					t.Fatalf("argv mid-exec = %q, want none yet", got)
				}
				mid.code = tc.then
				if err := mid.write(dir); err != nil {
					t.Fatal(err)
				}
				if got := scan(t, s).Proc(201).Argv; got != nil {
					t.Fatalf("argv still not laid out = %q, want none", got)
				}
				if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte("qemu-system-x86_64\x00-name\x00vm1\x00"), 0o644); err != nil {
					t.Fatal(err)
				}
				if got := scan(t, s).Proc(201).Argv; !slices.Equal(got, []string{"qemu-system-x86_64", "-name", "vm1"}) {
					t.Errorf("argv once laid out = %q, want [qemu-system-x86_64 -name vm1]", got)
				}
				before := scan(t, s).Proc(201)
				if after := scan(t, s).Proc(201); after != before || s.reads.cmdline != blankArgvs {
					t.Errorf("after the argv arrived: reads %+v, new *Process %v; want it cached again", s.reads, after != before)
				}
			})
		}
	})

	t.Run("migration shows only after Invalidate", func(t *testing.T) {
		cg := filepath.Join(root, "proc", "100", "cgroup")
		if err := os.WriteFile(cg, []byte("6:freezer:/\n0::/sandboxes/box1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := scan(t, s).Proc(100).Cgroup; got != "/user.slice" {
			t.Errorf("before Invalidate: Cgroup = %q, want the cached /user.slice", got)
		}
		s.Invalidate(Identity{PID: 100, Start: 5000})
		if got := scan(t, s).Proc(100).Cgroup; got != "/sandboxes/box1" {
			t.Errorf("after Invalidate: Cgroup = %q, want /sandboxes/box1", got)
		}
	})

	t.Run("departed identities are dropped", func(t *testing.T) {
		if err := os.RemoveAll(filepath.Join(root, "proc", "301")); err != nil {
			t.Fatal(err)
		}
		snap := scan(t, s)
		if _, ok := s.cache.entries[Identity{PID: 301, Start: 7010}]; ok {
			t.Errorf("cache still holds the departed 301")
		}
		if s.cache.len() != len(snap.Procs) {
			t.Errorf("cache holds %d identities for %d processes", s.cache.len(), len(snap.Procs))
		}
	})
}

func TestReadProcessFixture(t *testing.T) {
	root := filepath.Join(hostRoot, "proc")
	tests := []struct {
		name      string
		pid       int
		wantArgv  []string
		wantState byte
		kernel    bool
		vanished  bool
	}{
		{name: "user process", pid: 301, wantArgv: []string{"/usr/bin/firecracker", "--id", "box\xff\xfe1", "", "--no-api"}, wantState: 'S'},
		{name: "zombie", pid: 302, wantState: 'Z'},
		{name: "kthreadd", pid: 2, wantState: 'S', kernel: true},
		{name: "child of kthreadd", pid: 4, wantState: 'I', kernel: true},
		{name: "no such pid", pid: 999, vanished: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := readProcess(root, tt.pid)
			if tt.vanished {
				if !IsVanished(err) {
					t.Fatalf("readProcess(%d) error = %v, want a vanished error", tt.pid, err)
				}
				if _, _, err := ReadIdentity(root, tt.pid); !IsVanished(err) {
					t.Fatalf("ReadIdentity(%d) error = %v, want a vanished error", tt.pid, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("readProcess(%d): %v", tt.pid, err)
			}
			if p.PID != tt.pid || p.State != tt.wantState || p.Kernel != tt.kernel || !slices.Equal(p.Argv, tt.wantArgv) {
				t.Errorf("readProcess(%d) = pid %d state %c kernel %v argv %q; want state %c kernel %v argv %q",
					tt.pid, p.PID, p.State, p.Kernel, p.Argv, tt.wantState, tt.kernel, tt.wantArgv)
			}
			id, state, err := ReadIdentity(root, tt.pid)
			if err != nil || id != p.ID() || state != tt.wantState {
				t.Errorf("ReadIdentity(%d) = %v, %c, %v; want %v, %c", tt.pid, id, state, err, p.ID(), tt.wantState)
			}
		})
	}
}

func TestIsKernel(t *testing.T) {
	tests := []struct {
		name     string
		st       procfs.ProcStat
		kthreadd bool
		want     bool
	}{
		{name: "PF_KTHREAD", st: procfs.ProcStat{PID: 50, PPID: 2, Flags: pfKthread}, want: true},
		{name: "PF_KTHREAD, no kthreadd seen", st: procfs.ProcStat{PID: 50, PPID: 0, Flags: pfKthread}, want: true},
		{name: "child of kthreadd", st: procfs.ProcStat{PID: 50, PPID: 2}, kthreadd: true, want: true},
		{name: "kthreadd itself", st: procfs.ProcStat{PID: 2, Comm: "kthreadd"}, kthreadd: true, want: true},
		{name: "user process", st: procfs.ProcStat{PID: 50, PPID: 1, Flags: pfFlagsUser}, kthreadd: true, want: false},
		// In a pid namespace pid 2 is whatever the container started second.
		{name: "child of pid 2 in a container", st: procfs.ProcStat{PID: 50, PPID: 2}, kthreadd: false, want: false},
		{name: "pid 2 in a container", st: procfs.ProcStat{PID: 2, PPID: 1, Comm: "bash"}, kthreadd: false, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isKernel(tt.st, tt.kthreadd); got != tt.want {
				t.Errorf("isKernel = %v, want %v", got, tt.want)
			}
		})
	}
	if !isKthreadd(procfs.ProcStat{PID: 2, Comm: "kthreadd"}) || isKthreadd(procfs.ProcStat{PID: 2, Comm: "bash"}) {
		t.Errorf("isKthreadd does not tell kthreadd from a container's pid 2")
	}
}

func TestIsVanished(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil", err: nil, want: false},
		{name: "ENOENT", err: &fs.PathError{Op: "open", Path: "/proc/1/stat", Err: syscall.ENOENT}, want: true},
		{name: "ESRCH", err: fmt.Errorf("wrapped: %w", &fs.PathError{Op: "read", Path: "/proc/1/cmdline", Err: syscall.ESRCH}), want: true},
		{name: "fs.ErrNotExist", err: fmt.Errorf("wrapped: %w", fs.ErrNotExist), want: true},
		{name: "EACCES", err: &fs.PathError{Op: "readlink", Path: "/proc/1/exe", Err: syscall.EACCES}, want: false},
		{name: "parse error", err: errors.New("bad pid"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsVanished(tt.err); got != tt.want {
				t.Errorf("IsVanished(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestOneShotHoldsNoDescriptors: a scanner for a command that exits after
// a scan or two (Options.OneShot) holds no descriptor once a scan returns,
// and scans again correctly without them; a refresh loop's scanner holds
// one per process.
func TestOneShotHoldsNoDescriptors(t *testing.T) {
	child := startSleep(t, "one-shot")
	pid := child.Process.Pid
	for _, tc := range []struct {
		name    string
		oneShot bool
	}{{"refresh loop", false}, {"one shot", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewScanner(Options{OneShot: tc.oneShot})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for round := 1; round <= 2; round++ {
				if p := scan(t, s).Proc(pid); p == nil || p.Comm != "sleep" || len(p.Argv) == 0 || p.Argv[0] != "one-shot" {
					t.Fatalf("scan %d: child %d shows as %+v", round, pid, p)
				}
				checkHeldCount(t, s)
				held := HeldDescriptors(s)
				if tc.oneShot && (held != 0 || heldStat(s, pid) >= 0) {
					t.Errorf("scan %d: a one-shot scanner holds %d descriptors (the child's stat: fd %d)", round, held, heldStat(s, pid))
				}
				if !tc.oneShot && heldStat(s, pid) < 0 {
					t.Errorf("scan %d: a refresh loop's scanner holds no descriptor for the child's stat", round)
				}
			}
		})
	}
}
