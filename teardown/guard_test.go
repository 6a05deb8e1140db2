package teardown

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc"
)

// liveSnapshot builds a minimal snapshot of the whole host from /proc/*/stat,
// enough for the guards: pid, ppid, comm, flags, start, and Kernel.
func liveSnapshot(t *testing.T) *proc.Snapshot {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	snap := &proc.Snapshot{Self: os.Getpid()}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat("/proc", pid)
		if err != nil {
			continue // exited while we looked
		}
		p := &proc.Process{PID: pid, PPID: st.PPID, Comm: st.Comm, State: st.State,
			Flags: st.Flags, Start: st.Start, Kernel: st.Flags&pfKthread != 0}
		snap.Procs = append(snap.Procs, p)
	}
	// The directory lists pids as names: "10" before "9".
	slices.SortFunc(snap.Procs, func(a, b *proc.Process) int { return a.PID - b.PID })
	return snap
}

func TestRefuse(t *testing.T) {
	snap := liveSnapshot(t)
	child := startSleep(t).Process.Pid
	st, err := readStat("/proc", child)
	if err != nil {
		t.Fatal(err)
	}
	snap.Procs = append(snap.Procs, &proc.Process{PID: child, PPID: st.PPID, Comm: st.Comm})
	slices.SortFunc(snap.Procs, func(a, b *proc.Process) int { return a.PID - b.PID })

	self, parent := snap.Proc(os.Getpid()), snap.Proc(os.Getppid())
	if self == nil || parent == nil {
		t.Fatal("setup: self or parent missing from the snapshot")
	}
	var kworker *proc.Process
	for _, p := range snap.Procs {
		if p.PPID == kthreadd && p.Kernel {
			kworker = p
			break
		}
	}
	if kworker == nil || snap.Proc(kthreadd) == nil {
		t.Fatal("setup: no kernel threads visible")
	}
	tests := []struct {
		name string
		p    *proc.Process
		want Reason // "" = allowed
	}{
		{"pid 1", snap.Proc(1), ReasonInit},
		{"pid 0", &proc.Process{PID: 0}, ReasonInit},
		{"kthreadd", snap.Proc(kthreadd), ReasonKernelThread},
		{"a kernel worker", kworker, ReasonKernelThread},
		{"kernel flag without Kernel set", &proc.Process{PID: kworker.PID, PPID: 9, Flags: pfKthread}, ReasonKernelThread},
		{"sandtop itself", self, ReasonSelf},
		{"its parent", parent, ReasonAncestor},
		{"a plain child", snap.Proc(child), ""},
	}
	if gp := snap.Proc(parent.PPID); gp != nil && gp.PID > 1 {
		tests = append(tests, struct {
			name string
			p    *proc.Process
			want Reason
		}{"its grandparent", gp, ReasonAncestor})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Refuse(snap, tt.p, snap.Self)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Refuse = %v, want allowed", err)
				}
				return
			}
			var r *RefusedError
			if !errors.As(err, &r) || r.Reason != tt.want || r.PID != tt.p.PID || !errors.Is(err, ErrRefused) {
				t.Fatalf("Refuse = %v, want a refusal of pid %d for %q", err, tt.p.PID, tt.want)
			}
		})
	}
}

// TestRefuseAncestorCycle: a snapshot taken while pids were recycled can
// hold a ppid loop; the ancestor walk must end.
func TestRefuseAncestorCycle(t *testing.T) {
	a := &proc.Process{PID: 10, PPID: 11}
	b := &proc.Process{PID: 11, PPID: 10}
	snap := &proc.Snapshot{Self: 10, Procs: []*proc.Process{a, b}}
	if err := Refuse(snap, &proc.Process{PID: 12, PPID: 1}, 10); err != nil {
		t.Errorf("Refuse(unrelated) = %v", err)
	}
	if err := Refuse(snap, b, 10); !errors.Is(err, ErrRefused) {
		t.Errorf("Refuse(parent in a cycle) = %v, want refused", err)
	}
}

func TestSelfAndAncestorsLive(t *testing.T) {
	chain, err := SelfAndAncestors("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{os.Getpid(), os.Getppid(), 1} {
		if !chain[pid] {
			t.Errorf("chain %v lacks %d", chain, pid)
		}
	}
	if child := startSleep(t).Process.Pid; chain[child] {
		t.Errorf("chain %v holds a child %d", chain, child)
	}
}

func TestSelfAndAncestorsFixture(t *testing.T) {
	// writeProc lays out a fake /proc: self -> 30 -> 20 -> 1 (ppid 0).
	writeProc := func(t *testing.T, ppid map[int]int) string {
		root := t.TempDir()
		for pid, pp := range ppid {
			dir := filepath.Join(root, strconv.Itoa(pid))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			// All 52 fields a current kernel writes (proc(5)); field 22,
			// the start time, is 100.
			line := strconv.Itoa(pid) + " (x) S " + strconv.Itoa(pp) + " 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100" +
				strings.Repeat(" 0", 30) + "\n"
			if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink("30", filepath.Join(root, "self")); err != nil {
			t.Fatal(err)
		}
		return root
	}
	tests := []struct {
		name    string
		ppid    map[int]int
		want    []int
		wantErr bool
	}{
		{"full chain", map[int]int{30: 20, 20: 1, 1: 0, 99: 30}, []int{30, 20, 1}, false},
		{"ancestor vanished", map[int]int{30: 20}, []int{30, 20}, true},
		{"ppid loop", map[int]int{30: 20, 20: 30}, []int{30, 20}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chain, err := SelfAndAncestors(writeProc(t, tt.ppid))
			if (err != nil) != tt.wantErr {
				t.Fatalf("SelfAndAncestors error = %v, wantErr %v", err, tt.wantErr)
			}
			if len(chain) != len(tt.want) {
				t.Fatalf("chain = %v, want %v", chain, tt.want)
			}
			for _, pid := range tt.want {
				if !chain[pid] {
					t.Errorf("chain %v lacks %d", chain, pid)
				}
			}
		})
	}
}

func TestRefuseCgroup(t *testing.T) {
	dir := newCgroup(t, cgroupMount(t, ""))
	leaf := filepath.Join(dir, "a")
	mkdirs(t, leaf)
	cmds, _ := pinnedSleeps(t, 1)
	inside := cmds[0].Process.Pid
	moveInto(t, leaf, inside)
	tests := []struct {
		name      string
		dir       string
		protected map[int]bool
		refused   bool
	}{
		{"protected pid in a child cgroup", dir, map[int]bool{inside: true, 1: true}, true},
		{"nothing protected inside", dir, map[int]bool{os.Getpid(): true, 1: true}, false},
		{"vanished cgroup", filepath.Join(dir, "gone"), map[int]bool{inside: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := RefuseCgroup(tt.dir, tt.protected)
			if !tt.refused {
				if err != nil {
					t.Fatalf("RefuseCgroup = %v, want allowed", err)
				}
				return
			}
			var r *RefusedError
			if !errors.As(err, &r) || r.PID != inside || r.Cgroup != tt.dir || r.Reason != ReasonCgroupHoldsProtected {
				t.Fatalf("RefuseCgroup = %v, want a refusal naming pid %d", err, inside)
			}
		})
	}
}

func TestRefusedErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *RefusedError
		want string
	}{
		{"process", &RefusedError{PID: 1, Comm: "init", Reason: ReasonInit}, "refused pid 1 (init): init or not a process"},
		{"detail", &RefusedError{PID: 7, Reason: ReasonSupervisor, Detail: "supervisor of sandbox x"}, "refused pid 7: supervisor of sandbox x"},
		{"cgroup", &RefusedError{PID: 5, Cgroup: "/cg/x", Reason: ReasonCgroupHoldsProtected}, "refused cgroup /cg/x: cgroup holds a protected process: pid 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

// A refusal names the process by its comm, and a cgroup by its path: both
// the process's choice, and the message goes whole to stderr and to the
// screen's status line, where a newline would forge a line and an ESC be
// obeyed.
func TestRefusedErrorEscapesWhatProcessesChose(t *testing.T) {
	for _, e := range []*RefusedError{
		{PID: 42, Comm: "x\nsandtop: done", Reason: ReasonAncestor},
		{PID: 42, Comm: "\x1b]0;t\a", Cgroup: "/box\n/x\u202e", Reason: ReasonAncestor},
	} {
		if msg := e.Error(); strings.ContainsAny(msg, "\n\a\x1b\u202e") {
			t.Errorf("refusal %q", msg)
		}
	}
}
