// Package fleettest starts sandsim fleets for tests and looks at the host
// the way sandtop does. It is imported only by tests.
package fleettest

import (
	"context"
	"os"
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
