package teardown

import (
	"os"
	"os/exec"
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
// checks first), and never removes the cgroup of a unit a running systemd
// manager owns: one below a user manager's user@<uid>.service (a real
// process named systemd in its init.scope). A "….scope" no systemd
// manages (here, unless PID 1 is systemd) is only a name, and is removed.
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
	manager := filepath.Join(base, "user@4242.service")
	owned := filepath.Join(manager, "app-"+id+".scope")
	for _, d := range []string{empty, busy, unit, owned, filepath.Join(manager, "init.scope")} {
		mkdirs(t, d)
	}
	dir := filepath.Join(t.TempDir(), id)
	mkdirs(t, filepath.Join(dir, "sub"))
	cgPath := func(d string) string { return "/" + strings.TrimPrefix(d, root+"/") }
	cmd := startSleep(t)
	moveInto(t, busy, cmd.Process.Pid)
	user := exec.Command("/bin/sleep", "600")
	user.Args[0] = "systemd"
	if err := user.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reap(user) })
	moveInto(t, filepath.Join(manager, "init.scope"), user.Process.Pid)

	snap := mustScan(t, sc)
	hostSystemd := model.SystemdOwns(snap, "/system.slice/x.service")
	v := model.Build(snap, nil, nil)
	p := &Plan{
		Target: id, Runtime: "test", Sandbox: &model.Sandbox{ID: id, Runtime: "test"}, View: v, Deadline: time.Second,
		Leftovers: []model.Leftover{
			{Kind: proc.KindCgroup, Path: cgPath(empty), Dir: empty},
			{Kind: proc.KindCgroup, Path: cgPath(busy), Dir: busy},
			{Kind: proc.KindCgroup, Path: cgPath(unit), Dir: unit},
			{Kind: proc.KindCgroup, Path: cgPath(owned), Dir: owned},
			{Kind: proc.KindDir, Path: dir},
		},
	}
	eng, err := New(Options{Scanner: sc})
	if err != nil {
		t.Fatal(err)
	}
	var events []Event
	tot := eng.Run(t.Context(), p, func(ev Event) { events = append(events, ev) })
	unitEv := struct {
		status Status
		detail string
	}{OK, "removed empty cgroup " + cgPath(unit)}
	if hostSystemd {
		unitEv.status, unitEv.detail = Skip, "kept cgroup "+cgPath(unit)+": a systemd unit's"
	}
	for _, want := range []struct {
		status Status
		detail string
	}{
		{OK, "removed empty cgroup " + cgPath(empty)},
		{Skip, "kept cgroup " + cgPath(busy) + ": not empty"},
		unitEv,
		{Skip, "kept cgroup " + cgPath(owned) + ": a systemd unit's"},
		{OK, "removed " + dir},
	} {
		if !slices.ContainsFunc(events, func(ev Event) bool {
			return ev.Step == StepCleanup && ev.Status == want.status && ev.Detail == want.detail
		}) {
			t.Errorf("no cleanup event %s %q in %+v", want.status, want.detail, events)
		}
	}
	for d, gone := range map[string]bool{empty: true, busy: false, unit: !hostSystemd, owned: false, dir: true} {
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
