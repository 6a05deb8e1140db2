// Package fleettest starts sandsim fleets for tests and looks at the host
// the way sandtop does. It is imported only by tests.
package fleettest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// Start starts a fleet and closes it when the test ends; Close fails the
// test when anything of the fleet survived (seed 004's leak guard). Without
// root the test is skipped: the fleets' sandboxes live in cgroups they
// make. The test binary must run fleet.Main (or fleet.MaybeRun) first.
func Start(t testing.TB, spec fleet.Spec) *fleet.Fleet {
	t.Helper()
	if os.Geteuid() != 0 {
		proctest.SkipMissing(t, "needs root: sandsim fleets make cgroups")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := fleet.Start(ctx, spec, fleet.Options{})
	if err != nil {
		t.Fatalf("start fleet: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("fleet close: %v", err)
		}
	})
	return f
}

// View scans the live host once and groups it with rules.
func View(t testing.TB, rules model.Rules) *model.View {
	t.Helper()
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	snap, err := sc.Scan()
	if err != nil {
		t.Fatal(err)
	}
	return model.Build(snap, rules, nil)
}

// SharedCgroup moves pids into a new v2 cgroup whose name says nothing of
// any sandbox: the shared scope a sandbox's processes may end up in (an
// operator's login scope, a runner's service). undo moves them back where
// they were. When the test ends, whatever is still in it moves to the
// root cgroup and the cgroup is removed. Skips without a v2 hierarchy.
func SharedCgroup(t testing.TB, label string, pids []int) (dir string, undo func()) {
	t.Helper()
	snap := View(t, model.Rules{}).Snapshot
	root := snap.Mounts.V2Dir("/")
	if root == "" {
		proctest.SkipMissing(t, "no cgroup v2 hierarchy")
	}
	dir = filepath.Join(root, fmt.Sprintf("sandtop-shared-%d-%s.scope", os.Getpid(), label))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("make shared cgroup: %v", err)
	}
	t.Cleanup(func() {
		proctest.Eventually(5*time.Second, func() bool {
			pids, _ := proc.ReadCgroupProcs(dir)
			for _, pid := range pids {
				_ = os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
			}
			err := os.Remove(dir)
			return err == nil || os.IsNotExist(err)
		})
	})
	back := map[int]string{}
	for _, pid := range pids {
		if p := snap.Proc(pid); p != nil {
			back[pid] = snap.Mounts.V2Dir(p.Cgroup)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Logf("move %d into %s: %v", pid, dir, err)
		}
	}
	return dir, func() {
		for pid, d := range back {
			_ = os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
		}
	}
}
