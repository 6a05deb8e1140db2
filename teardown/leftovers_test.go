package teardown

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// TestLeftoverCgroups: a plan of a sandbox with no process left removes
// its empty cgroups and paths, keeps a cgroup that a process joined since
// the plan (rmdir of a busy cgroup is the kernel's EBUSY, and the engine
// checks first), and never removes a systemd unit's cgroup.
func TestLeftoverCgroups(t *testing.T) {
	root := cgroupMount(t, "")
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	base := newCgroup(t, root)
	id := "lefttest" + filepath.Base(base)[len("sandtop-test-"):]
	empty := filepath.Join(base, id)
	busy := filepath.Join(base, id+"-busy", id)
	unit := filepath.Join(base, "machine-"+id+".scope")
	for _, d := range []string{empty, busy, unit} {
		mkdirs(t, d)
	}
	dir := filepath.Join(t.TempDir(), id)
	mkdirs(t, filepath.Join(dir, "sub"))
	cgPath := func(d string) string { return "/" + strings.TrimPrefix(d, root+"/") }
	cmd := startSleep(t)
	moveInto(t, busy, cmd.Process.Pid)

	v := model.Build(mustScan(t, sc), nil, nil)
	p := &Plan{
		Target: id, Runtime: "test", Sandbox: &model.Sandbox{ID: id, Runtime: "test"}, View: v, Deadline: time.Second,
		Leftovers: []model.Leftover{
			{Kind: proc.KindCgroup, Path: cgPath(empty), Dir: empty},
			{Kind: proc.KindCgroup, Path: cgPath(busy), Dir: busy},
			{Kind: proc.KindCgroup, Path: cgPath(unit), Dir: unit},
			{Kind: proc.KindDir, Path: dir},
		},
	}
	eng, err := New(Options{Scanner: sc})
	if err != nil {
		t.Fatal(err)
	}
	var events []Event
	tot := eng.Run(t.Context(), p, func(ev Event) { events = append(events, ev) })
	for _, want := range []struct {
		status Status
		detail string
	}{
		{OK, "removed empty cgroup " + cgPath(empty)},
		{Skip, "kept cgroup " + cgPath(busy) + ": not empty"},
		{Skip, "kept cgroup " + cgPath(unit) + ": a systemd unit's"},
		{OK, "removed " + dir},
	} {
		if !slices.ContainsFunc(events, func(ev Event) bool {
			return ev.Step == StepCleanup && ev.Status == want.status && ev.Detail == want.detail
		}) {
			t.Errorf("no cleanup event %s %q in %+v", want.status, want.detail, events)
		}
	}
	for d, gone := range map[string]bool{empty: true, busy: false, unit: false, dir: true} {
		if _, err := os.Stat(d); (err != nil) != gone {
			t.Errorf("%s: gone %v, want %v", d, err != nil, gone)
		}
	}
	if !tot.OK() || tot.Killed != 0 {
		t.Errorf("totals %+v: want nothing killed and no step failed", tot)
	}
	if alive := cmd.ProcessState == nil; !alive {
		t.Error("the process in the busy cgroup was touched")
	}
}

func mustScan(t *testing.T, sc *proc.Scanner) *proc.Snapshot {
	t.Helper()
	snap, err := sc.Scan()
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
