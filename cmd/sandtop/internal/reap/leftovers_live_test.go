package reap

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/hostview"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
	"github.com/sandtop/sandtop/teardown"
)

// workspace returns the vm0 sandbox's workspace directory.
func workspace(t *testing.T, s *fleet.Sandbox) string {
	t.Helper()
	for _, d := range s.Dirs {
		if filepath.Base(filepath.Dir(d)) == "workspaces" {
			return d
		}
	}
	t.Fatalf("%s has no workspace in %v", s.Name, s.Dirs)
	return ""
}

// sockDir makes vm0's socket directory for the sandbox (sandsim names it
// in argv only), removed at cleanup if still there.
func sockDir(t *testing.T, s *fleet.Sandbox) string {
	t.Helper()
	dir := "/run/vm0/sock/" + s.ID
	if err := os.MkdirAll(dir, 0o755); err != nil {
		proctest.SkipMissing(t, "cannot make %s: %v", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "api.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// leftoverPaths lists a sandbox's leftovers as kind:path, removable or kept.
func leftoverPaths(sb *model.Sandbox) (removable, kept []string) {
	for _, l := range sb.Leftovers {
		if l.Removable() {
			removable = append(removable, string(l.Kind)+":"+l.Path)
		} else {
			kept = append(kept, string(l.Kind)+":"+l.Path)
		}
	}
	slices.Sort(removable)
	slices.Sort(kept)
	return removable, kept
}

// scanUntilNoProcess scans src until none of the sandboxes ids has a
// process left, for at most 5 s, and returns the last view. A killed
// process stays a zombie until its parent reaps it, and a sandbox with a
// process in it, even a zombie, has left nothing behind yet.
func scanUntilNoProcess(t *testing.T, src *hostview.Source, ids ...string) *model.View {
	t.Helper()
	var v *model.View
	proctest.Eventually(5*time.Second, func() bool {
		var err error
		if v, err = src.Scan(); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if sb := v.Sandbox(id); sb != nil && len(sb.Members) > 0 {
				return false
			}
		}
		return true
	})
	return v
}

// TestReapLeftovers: a vm0 VM SIGKILLed by hand after its runner died
// leaves its workspace and socket directory; a boxlite box whose processes
// all died leaves its empty cgroup. sandtop shows both as leftovers, and
// reap --apply removes exactly those paths and nothing of the healthy
// sandboxes beside them.
func TestReapLeftovers(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm-dead", Runtime: fleet.VM0, Orphan: true},
		{Name: "box-dead", Runtime: fleet.Boxlite, Detached: true},
		{Name: "box-live", Runtime: fleet.Boxlite, Detached: true},
		{Name: "ctr-live", Runtime: fleet.Containerd},
	}})
	m := f.Manifest()
	vm, box, live := m.Sandbox("vm-dead"), m.Sandbox("box-dead"), m.Sandbox("box-live")
	if box.CgroupDir == "" || live.CgroupDir == "" {
		proctest.SkipMissing(t, "the boxes have no cgroups of their own on this host")
	}
	ws, sock := workspace(t, vm), sockDir(t, vm)
	rules := fleetRules(m)
	sel, texts := selectFleet(t, []string{"orphan", "leftover"}, m)
	// The reaper sees the VM alive first (it learns its workspace's base
	// from it), then dead.
	h := newHarness(t, Config{Policy: Policy{For: 600 * time.Millisecond}, Selects: sel, Texts: texts, Interval: 100 * time.Millisecond, Once: true}, rules)
	h.run(t, time.Minute)
	killByHand(t, vm)
	killByHand(t, box)

	// What the reaper's next scans show: both leftovers, with their paths.
	// Its source saw the VM alive and remembers its workspace's base.
	v := scanUntilNoProcess(t, h.r.src, vm.ID, box.ID)
	wantVM := []string{"dir:" + sock, "dir:" + ws}
	slices.Sort(wantVM)
	if sb := v.Sandbox(vm.ID); sb == nil {
		t.Fatalf("the dead VM %s is no leftover sandbox", vm.ID)
	} else if rm, kept := leftoverPaths(sb); !slices.Equal(rm, wantVM) || len(kept) > 0 || !sb.HasBadge(model.BadgeLeftover) || len(sb.Members) != 0 {
		t.Errorf("vm leftovers: removable %v kept %v badges %v, want %v", rm, kept, sb.Badges, wantVM)
	}
	if sb := v.Sandbox(box.ID); sb == nil {
		t.Fatalf("the dead box %s is no leftover sandbox", box.ID)
	} else if rm, _ := leftoverPaths(sb); !slices.Equal(rm, []string{"cgroup:" + box.Cgroup}) || sb.Runtime != "boxlite" {
		t.Errorf("box leftovers: %v (%s), want the empty cgroup %s", rm, sb.Runtime, box.Cgroup)
	}
	if sb := v.Sandbox(live.ID); sb == nil || len(sb.Leftovers) != 0 {
		t.Errorf("the live box is shown as %+v", sb)
	}
	doc := v.Document(false)
	for _, s := range doc.Sandboxes {
		if s.ID == box.ID && (len(s.Leftovers) != 1 || s.Leftovers[0].Kind != "cgroup" || s.Leftovers[0].AgeSeconds < 0) {
			t.Errorf("JSON leftovers of the box: %+v", s.Leftovers)
		}
	}

	// reap --apply --once: both go, and exactly their paths.
	h2 := newHarness(t, Config{Policy: Policy{For: 300 * time.Millisecond}, Selects: sel, Texts: texts, Interval: 100 * time.Millisecond, Once: true, Apply: true}, rules)
	h2.r.src = h.r.src // it remembers the base of the VM it saw alive
	h2.run(t, time.Minute)
	last := h2.last(t)
	for _, id := range []string{vm.ID, box.ID} {
		if e := last[id]; e.Action != "reaped" || !slices.ContainsFunc(e.Leftovers, func(l model.LeftoverJSON) bool { return l.Path != "" }) {
			t.Errorf("%s: %q (%s) %v", id, e.Action, e.Reason, e.Failures)
		}
	}
	for _, p := range []string{ws, sock, box.CgroupDir} {
		if exists(p) {
			t.Errorf("%s survived the reap", p)
		}
	}
	for _, p := range []string{live.CgroupDir, filepath.Dir(ws), m.Base} {
		if !exists(p) {
			t.Errorf("%s removed, but it was no leftover", p)
		}
	}
	for _, d := range box.Dirs {
		if !exists(d) {
			t.Errorf("box dir %s removed: no rule names it a leftover", d)
		}
	}
	if !allAlive(live) || !allAlive(m.Sandbox("ctr-live")) {
		t.Error("a live sandbox was harmed")
	}
	recs := h2.auditRecords(t)
	var got []string
	for _, r := range recs {
		got = append(got, r.Leftovers...)
	}
	slices.Sort(got)
	want := []string{box.Cgroup, sock, ws}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("audit records name %v, want %v", got, want)
	}
}

// TestLeftoversUnderLiveSupervisor: a VM SIGKILLed by hand while its runner
// lives leaves directories the runner owns: reported, never removed, by
// the reaper or by a kill.
func TestLeftoversUnderLiveSupervisor(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0},
		{Name: "vm-other", Runtime: fleet.VM0},
	}})
	m := f.Manifest()
	vm := m.Sandbox("vm")
	ws, sock := workspace(t, vm), sockDir(t, vm)
	rules := fleetRules(m)
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	// The source sees the VM alive first: it learns its workspace's base.
	src := hostview.NewSource(sc, rules, hostview.WalkEveryScan, nil)
	if _, err := src.Scan(); err != nil {
		t.Fatal(err)
	}
	killByHand(t, vm)
	v := scanUntilNoProcess(t, src, vm.ID)
	sb := v.Sandbox(vm.ID)
	if sb == nil {
		t.Fatal("the dead VM is not shown")
	}
	if rm, kept := leftoverPaths(sb); len(rm) != 0 || len(kept) != 2 || !sb.Supervised || !strings.Contains(sb.Leftovers[0].Keep, "runner") {
		t.Fatalf("leftovers under a live runner: removable %v kept %v (%v)", rm, kept, sb.Leftovers)
	}

	// kill ID: the engine reports each as kept.
	eng, err := teardown.New(teardown.Options{Rules: rules, Scanner: sc})
	if err != nil {
		t.Fatal(err)
	}
	p, err := teardown.PlanSandbox(v, sb, teardown.PlanOptions{Protected: eng.Protected()})
	if err != nil {
		t.Fatal(err)
	}
	var kept int
	eng.Run(t.Context(), p, func(ev teardown.Event) {
		if ev.Step == teardown.StepCleanup && ev.Status == teardown.Skip && strings.HasPrefix(ev.Detail, "kept ") {
			kept++
		}
		if ev.Step == teardown.StepVerify && ev.Status == teardown.Fail {
			kept = -100 // the runner came back: not expected here
		}
	})
	if kept != 2 || !exists(ws) || !exists(sock) {
		t.Errorf("kill of a leftover under a live runner: %d kept events; workspace %v, socket dir %v", kept, exists(ws), exists(sock))
	}

	// The reaper: selected, kept, never reaped.
	sel, texts := selectFleet(t, []string{"leftover"}, m)
	h := newHarness(t, Config{Policy: Policy{}, Selects: sel, Texts: texts, Interval: 100 * time.Millisecond, Once: true, Apply: true}, rules)
	h.r.src = src
	h.run(t, time.Minute)
	if e := h.last(t)[vm.ID]; e.Action != "keep" || !exists(ws) || !exists(sock) {
		t.Errorf("reaper on a leftover under a live runner: %q (%s)", e.Action, e.Reason)
	}
	if other := m.Sandbox("vm-other"); !allAlive(other) {
		t.Error("the other VM was harmed")
	}
}
