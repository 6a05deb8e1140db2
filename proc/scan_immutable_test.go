package proc

import (
	"github.com/sandtop/sandtop/proc/proctest"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// snapshotCopy is a deep copy of a Snapshot's contents, taken when Scan
// returned it.
type snapshotCopy struct {
	procs               []Process
	cgroups, freezers   map[string]CgroupState
	listeners           map[string]bool
	partly              int
	name                string
	sharedWithPrevious  int
	processesInPrevious int
}

func copySnapshot(name string, s *Snapshot) snapshotCopy {
	c := snapshotCopy{
		name: name, partly: s.PartlyUnreadable,
		cgroups: maps.Clone(s.Cgroups), freezers: maps.Clone(s.Freezers), listeners: maps.Clone(s.Listeners),
	}
	deep := func(p *Process) Process {
		q := *p
		q.Argv, q.NSpid = slices.Clone(p.Argv), slices.Clone(p.NSpid)
		return q
	}
	for _, p := range s.Procs {
		c.procs = append(c.procs, deep(p))
	}
	return c
}

func (c snapshotCopy) check(t *testing.T, s *Snapshot) {
	t.Helper()
	if len(s.Procs) != len(c.procs) {
		t.Fatalf("snapshot %q: %d processes, had %d when returned", c.name, len(s.Procs), len(c.procs))
	}
	for i, p := range s.Procs {
		if !reflect.DeepEqual(*p, c.procs[i]) {
			t.Errorf("snapshot %q: process %d modified after Scan returned:\nwas %+v\nnow %+v", c.name, p.PID, c.procs[i], *p)
		}
	}
	for _, p := range s.Procs {
		if s.Proc(p.PID) != p {
			t.Errorf("snapshot %q: Proc(%d) is not the process of Procs", c.name, p.PID)
		}
	}
	if !maps.Equal(s.Cgroups, c.cgroups) || !maps.Equal(s.Freezers, c.freezers) ||
		!maps.Equal(s.Listeners, c.listeners) || s.PartlyUnreadable != c.partly {
		t.Errorf("snapshot %q: cgroup, freezer or listener maps modified after Scan returned", c.name)
	}
}

// TestScanNeverModifiesSnapshots scans a fixture through every kind of
// change a refresh handles (stat fields, exec, exec of a same-named
// program, exit to a zombie, migration after Invalidate, departure),
// keeping a deep copy of each snapshot as Scan returned it, and checks at
// the end that no snapshot changed. Unchanged processes are shared between
// snapshots (see Scan), so a scanner that wrote into a shared Process
// instead of replacing it fails here.
func TestScanNeverModifiesSnapshots(t *testing.T) {
	root := proctest.Fixture(t, hostRoot)
	dir := func(pid string) string { return filepath.Join(root, "proc", pid) }
	runner := fakeStat{pid: 300, ppid: 1, comm: "runner", state: 'S', start: 7000, code: 0x55d0c8a00000}
	writeStat := func(f fakeStat, d string) func() error { return func() error { return f.write(dir(d)) } }
	writeFile := func(d, name, data string) func() error {
		return func() error { return os.WriteFile(filepath.Join(dir(d), name), []byte(data), 0o644) }
	}
	busy, execd, dead := runner, runner, runner
	busy.state = 'R'
	execd.code = 0x5612aa400000
	dead.state, dead.code = 'Z', 0
	s := newRootScanner(t, root)
	if err := runner.write(dir("300")); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		changes []func() error
		after   func()
	}{
		{name: "cold"},
		{name: "unchanged"},
		{name: "state change", changes: []func() error{writeStat(busy, "300")}},
		{name: "exec", changes: []func() error{
			writeStat(fakeStat{pid: 201, ppid: 100, comm: "sleep", state: 'S', start: 6000}, "201"),
			writeFile("201", "cmdline", "sleep\x0010\x00"),
		}},
		{name: "same-named exec", changes: []func() error{
			writeStat(execd, "300"), writeFile("300", "cmdline", "runner\x00--id\x00box2\x00"),
		}},
		{name: "zombie", changes: []func() error{writeStat(dead, "300"), writeFile("300", "cmdline", "")}},
		{name: "migration", changes: []func() error{writeFile("100", "cgroup", "6:freezer:/\n0::/sandboxes/box1\n")},
			after: func() { s.Invalidate(Identity{PID: 100, Start: 5000}) }},
		{name: "after invalidate"},
		{name: "departure", changes: []func() error{func() error { return os.RemoveAll(dir("301")) }}},
	}
	var snaps []*Snapshot
	var copies []snapshotCopy
	for _, step := range steps {
		for _, change := range step.changes {
			if err := change(); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
		}
		snap := scan(t, s)
		if step.after != nil {
			step.after()
		}
		c := copySnapshot(step.name, snap)
		if len(snaps) > 0 {
			prev := snaps[len(snaps)-1]
			for _, p := range snap.Procs {
				if prev.Proc(p.PID) == p {
					c.sharedWithPrevious++
				}
			}
			c.processesInPrevious = len(prev.Procs)
		}
		snaps, copies = append(snaps, snap), append(copies, c)
	}
	for i, snap := range snaps {
		copies[i].check(t, snap)
	}
	// The test proves something only if snapshots did share processes.
	if c := copies[1]; c.sharedWithPrevious != c.processesInPrevious {
		t.Errorf("unchanged refresh shared %d of %d processes, want all", c.sharedWithPrevious, c.processesInPrevious)
	}
	if got := snaps[len(snaps)-1].Proc(100).Cgroup; got != "/sandboxes/box1" {
		t.Errorf("after Invalidate: pid 100 Cgroup = %q, want /sandboxes/box1", got)
	}
}
