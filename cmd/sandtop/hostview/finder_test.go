package hostview

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// TestFinderWalksOnlyWhenItMust runs a Finder over real cgroups: Docker's
// shape (docker-<id>.scope) under a parent of the test's own, one with a
// process in it and one made empty. Between walks it must still see a
// leftover go (its state is read, not cached), and a process leaving a
// cgroup must make it walk at once.
func TestFinderWalksOnlyWhenItMust(t *testing.T) {
	proctest.RequireRoot(t)
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	m := sc.Mounts()
	if m.Unified == "" {
		proctest.SkipMissing(t, "no cgroup2 mount")
	}
	parent := m.V2Dir("/sandtop-finder-" + randomHex(t, 4))
	busyID, emptyID := randomHex(t, 32), randomHex(t, 32)
	busyDir := filepath.Join(parent, "docker-"+busyID+".scope")
	emptyDir := filepath.Join(parent, "docker-"+emptyID+".scope")
	if err := os.MkdirAll(busyDir, 0o755); err != nil {
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
		_ = os.Remove(emptyDir)
		_ = os.Remove(busyDir)
		_ = os.Remove(parent)
	})
	if err := os.WriteFile(filepath.Join(busyDir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}

	rules := model.Effective(nil, true)
	f := NewFinder(model.NewLeftovers(rules), time.Hour)
	b := model.NewBuilder(rules)
	var prev *model.View
	refresh := func() *model.View {
		t.Helper()
		snap, err := sc.Scan()
		if err != nil {
			t.Fatal(err)
		}
		v, err := f.Add(b.Build(snap, prev))
		if err != nil {
			t.Fatal(err)
		}
		prev = v
		return v
	}
	leftover := func(v *model.View, id string) bool {
		for _, sb := range v.Sandboxes {
			if sb.ID == id && len(sb.Members) == 0 && len(sb.Leftovers) > 0 {
				return true
			}
		}
		return false
	}
	live := func(v *model.View, id string) bool {
		for _, sb := range v.Sandboxes {
			if sb.ID == id && len(sb.Members) > 0 {
				return true
			}
		}
		return false
	}

	v := refresh()
	if !live(v, busyID) || leftover(v, busyID) {
		t.Fatalf("first refresh: docker-%s.scope with a process should be a live sandbox, not a leftover", busyID[:12])
	}
	// Made empty, with no process ever in it: only a walk finds it, and
	// nothing the scan sees has changed.
	if err := os.Mkdir(emptyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if v := refresh(); leftover(v, emptyID) {
		t.Errorf("an empty cgroup made after the walk is shown before the next walk was due: the Finder walked anyway")
	}
	// The process leaves: the cgroups the scan sees change, so it walks.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	exited = true
	v = refresh()
	if !leftover(v, busyID) || !leftover(v, emptyID) {
		t.Fatalf("after the only process left: leftover %s %v, %s %v; want both (a walk)",
			busyID[:12], leftover(v, busyID), emptyID[:12], leftover(v, emptyID))
	}
	// Removed between walks: the recheck reads each empty cgroup's state.
	if err := os.Remove(emptyDir); err != nil {
		t.Fatal(err)
	}
	v = refresh()
	if leftover(v, emptyID) || !leftover(v, busyID) {
		t.Errorf("after rmdir of %s: leftover %v (want false), %s still %v (want true)",
			emptyID[:12], leftover(v, emptyID), busyID[:12], leftover(v, busyID))
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
