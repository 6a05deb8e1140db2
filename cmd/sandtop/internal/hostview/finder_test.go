package hostview

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// TestFinderWalksOnlyWhenItMust runs a Finder over real cgroups in
// Docker's shape (docker-<id>.scope) under a parent of the test's own: one
// with a process in it, and one made empty. The scans it is given are
// hand-built, holding only that process, so that nothing else running on
// the host changes what the Finder sees. Between walks it must still see
// a leftover go (its state is read, not cached), and the process leaving
// its cgroup must make it walk at once.
func TestFinderWalksOnlyWhenItMust(t *testing.T) {
	m := cgroup2Mounts(t)
	parent := "/sandtop-finder-" + randomHex(t, 4)
	busyID, emptyID := randomHex(t, 32), randomHex(t, 32)
	busyCg, emptyCg := parent+"/docker-"+busyID+".scope", parent+"/docker-"+emptyID+".scope"
	if err := os.MkdirAll(m.V2Dir(busyCg), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = cmd.Process.Kill() // our own child, by its handle
			_ = cmd.Wait()
		}
		for _, cg := range []string{emptyCg, busyCg, parent} {
			_ = os.Remove(m.V2Dir(cg))
		}
	})
	pid := cmd.Process.Pid
	if err := os.WriteFile(filepath.Join(m.V2Dir(busyCg), "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatal(err)
	}

	rules := model.Effective(nil, true)
	f := NewFinder(model.NewLeftovers(rules), time.Hour)
	now := time.Now()
	refresh := func(procs ...*proc.Process) *model.View {
		t.Helper()
		now = now.Add(time.Second)
		snap := modeltest.Snapshot(proc.Snapshot{Time: now, Mounts: m, Cgroups: map[string]proc.CgroupState{}}, procs...)
		for _, p := range procs {
			snap.Cgroups[p.Cgroup] = proc.CgroupState{Exists: true, Populated: true}
		}
		v, err := f.Add(model.Build(snap, rules, nil))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	sleeper := modeltest.Proc(pid, 1, "sleep 300", modeltest.Cgroup(busyCg))
	leftover := func(v *model.View, id string) bool {
		sb := v.Sandbox("docker:" + id)
		return sb != nil && len(sb.Members) == 0 && len(sb.Leftovers) > 0
	}

	v := refresh(sleeper)
	if sb := v.Sandbox("docker:" + busyID); sb == nil || len(sb.Members) == 0 || leftover(v, busyID) {
		t.Fatalf("first refresh: docker-%s.scope with a process should be a live sandbox, not a leftover", busyID[:12])
	}
	// Made empty, with no process ever in it: only a walk finds it, and
	// nothing the scan shows has changed.
	if err := os.Mkdir(m.V2Dir(emptyCg), 0o755); err != nil {
		t.Fatal(err)
	}
	if v := refresh(sleeper); leftover(v, emptyID) {
		t.Errorf("an empty cgroup made after the walk is shown before the next walk was due: the Finder walked anyway")
	}
	// The process leaves: the cgroups the scan shows change, so it walks.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	exited = true
	v = refresh()
	if !leftover(v, busyID) || !leftover(v, emptyID) {
		t.Fatalf("after the only process left: leftover %s %v, %s %v; want both (a walk)",
			busyID[:12], leftover(v, busyID), emptyID[:12], leftover(v, emptyID))
	}
	// Removed between walks: the recheck reads each empty cgroup's state.
	if err := os.Remove(m.V2Dir(emptyCg)); err != nil {
		t.Fatal(err)
	}
	v = refresh()
	if leftover(v, emptyID) || !leftover(v, busyID) {
		t.Errorf("after rmdir of %s: leftover %v (want false), %s still %v (want true)",
			emptyID[:12], leftover(v, emptyID), busyID[:12], leftover(v, busyID))
	}
	// A walk is due once rewalk has passed, whatever the scan shows.
	if err := os.Mkdir(m.V2Dir(emptyCg), 0o755); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if v := refresh(); !leftover(v, emptyID) {
		t.Errorf("an hour on, the Finder has not walked again: %s not found", emptyID[:12])
	}
}

// cgroup2Mounts is the host's mounts, for a test that makes cgroups on
// cgroup2 as root; it skips elsewhere.
func cgroup2Mounts(t *testing.T) proc.Mounts {
	t.Helper()
	proctest.RequireRoot(t)
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := sc.Mounts()
	sc.Close()
	if m.Unified == "" {
		proctest.SkipMissing(t, "no cgroup2 mount")
	}
	return m
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestWalkAheadSettlesAsAWalkAfter walks real cgroups beside Build and
// must find what a walk after it finds. The tree has a rule whose cgroup
// shape is taken only for a sandbox seen alive, as containerd's is, and
// one taken always:
//
//	<top>/ns/alive      the live sandbox's cgroup: taken
//	<top>/ns/alive/box-inner   below it: part of it, never taken
//	<top>/ns/dead       no sandbox alive: not taken, so walked into
//	<top>/ns/dead/box-orphan   a leftover of the second rule: taken
func TestWalkAheadSettlesAsAWalkAfter(t *testing.T) {
	m := cgroup2Mounts(t)
	top := "/sandtopahead" + randomHex(t, 4)
	made := []string{top, top + "/ns", top + "/ns/alive", top + "/ns/alive/box-inner", top + "/ns/dead", top + "/ns/dead/box-orphan"}
	for _, cg := range made {
		if err := os.Mkdir(m.V2Dir(cg), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, cg := range slices.Backward(made) {
			_ = os.Remove(m.V2Dir(cg))
		}
	})
	rules, err := model.ParseRules([]byte(`
[[rule]]
name = "nested"
cgroup = "^`+top+`/(?P<ns>[a-z]+)/(?P<id>[a-z]+)$"
nested_pid_namespace = true

[[rule]]
name = "box"
cgroup = "(?:^|/)box-(?P<id>[a-z]+)$"
`), "ahead.toml")
	if err != nil {
		t.Fatal(err)
	}
	// The live sandbox: a process in a pid namespace of its own, in its
	// cgroup. The snapshot is hand-built, so nothing else on the host
	// counts.
	snap := modeltest.Snapshot(proc.Snapshot{Time: time.Now(), Mounts: m, Cgroups: map[string]proc.CgroupState{
		top + "/ns/alive": {Exists: true, Populated: true},
	}}, modeltest.Proc(os.Getpid(), 1, "init", modeltest.Cgroup(top+"/ns/alive"), modeltest.NSpid(os.Getpid(), 1)))

	found := func(ahead bool) []string {
		t.Helper()
		f := NewFinder(model.NewLeftovers(rules), 0)
		if ahead {
			f.WalkAhead(snap)
		}
		v := model.Build(snap, rules, nil)
		if v.Sandbox("nested:ns/alive") == nil && v.Sandbox("nested:alive") == nil {
			t.Fatalf("no live sandbox for %s/ns/alive: %v", top, v.Sandboxes)
		}
		if _, err := f.Add(v); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range f.dirs {
			if strings.HasPrefix(d.Path, top+"/") {
				out = append(out, strings.TrimPrefix(d.Path, top+"/"))
			}
		}
		return out
	}
	want := []string{"ns/alive", "ns/dead/box-orphan"}
	if after := found(false); !slices.Equal(after, want) {
		t.Errorf("walk after the view: %q, want %q", after, want)
	}
	if ahead := found(true); !slices.Equal(ahead, want) {
		t.Errorf("walk ahead of the view: %q, want %q", ahead, want)
	}
}
