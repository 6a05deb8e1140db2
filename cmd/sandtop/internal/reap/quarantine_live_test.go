package reap

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/hostview"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// TestReapQuarantine: a dead VM's workspace holds an immutable file
// (chattr +i), so every teardown of it fails. `reap --once --apply` run as
// from a timer, each run a new process with the same --state-dir, tries
// it three times, then quarantines it: later runs log it as quarantined
// with its last error and tear nothing down, and the metric counts it.
// --retry-quarantined gives it one more try; once the file is mutable
// again and the workspace changed (its evidence), it is reaped and
// forgotten.
func TestReapQuarantine(t *testing.T) {
	proctest.RequireRoot(t)
	if _, err := exec.LookPath("chattr"); err != nil {
		proctest.SkipMissing(t, "no chattr")
	}
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{{Name: "vm", Runtime: fleet.VM0, Orphan: true}}})
	m := f.Manifest()
	vm := m.Sandbox("vm")
	ws := workspace(t, vm)
	stuck := filepath.Join(ws, "immutable")
	if err := os.WriteFile(stuck, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+i", stuck).CombinedOutput(); err != nil {
		proctest.SkipMissing(t, "chattr +i on %s: %v: %s", stuck, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", stuck).Run() })
	rules := fleetRules(m)
	sel, texts := selectFleet(t, []string{"leftover"}, m)
	state := t.TempDir()
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	// The host source remembers the base of the VM it saw alive.
	src := hostview.NewSource(sc, rules, hostview.WalkEveryScan, nil)
	if _, err := src.Scan(); err != nil {
		t.Fatal(err)
	}
	killByHand(t, vm)

	// once is one `sandtop reap --once --apply --for 0`: a reaper of its
	// own, the state dir shared.
	audits := 0
	once := func(retry bool) (Entry, float64) {
		t.Helper()
		h := newHarness(t, Config{Selects: sel, Texts: texts, Interval: 50 * time.Millisecond, Once: true, Apply: true, StateDir: state, RetryQuarantined: retry}, rules)
		h.r.src = src
		h.r.metrics = NewMetrics()
		h.run(t, time.Minute)
		audits += len(h.auditRecords(t))
		return h.last(t)[vm.ID], testutil.ToFloat64(h.r.metrics.quarantined.WithLabelValues("vm0"))
	}
	var actions []string
	for range 5 {
		e, _ := once(false)
		actions = append(actions, e.Action)
	}
	want := []string{"failed", "failed", "failed", "quarantined", "quarantined"}
	if !slices.Equal(actions, want) {
		t.Fatalf("five runs: %v, want %v", actions, want)
	}
	e, gauge := once(false)
	if e.Action != "quarantined" || e.Quarantine == nil || e.Quarantine.Count != 3 || e.Quarantine.LastError == "" || gauge != 1 {
		t.Fatalf("a sixth run: %q %+v, gauge %v", e.Action, e.Quarantine, gauge)
	}
	if audits != 3 {
		t.Errorf("%d teardowns recorded, want 3: none once quarantined", audits)
	}
	if !exists(stuck) {
		t.Fatal("the immutable file went")
	}

	// --retry-quarantined: one more try, one more failure, quarantined
	// again at once.
	if e, gauge := once(true); e.Action != "failed" || e.Quarantine == nil || gauge != 1 {
		t.Errorf("retry: %q %+v gauge %v", e.Action, e.Quarantine, gauge)
	}
	if e, _ := once(false); e.Action != "quarantined" {
		t.Errorf("after the retry: %q", e.Action)
	}

	// Fixed by hand, and the workspace changed: its evidence is new, so
	// it is tried, reaped, and forgotten.
	if out, err := exec.Command("chattr", "-i", stuck).CombinedOutput(); err != nil {
		t.Fatalf("chattr -i: %v: %s", err, out)
	}
	now := time.Now().Add(time.Second)
	if err := os.Chtimes(ws, now, now); err != nil {
		t.Fatal(err)
	}
	if e, gauge := once(false); e.Action != "reaped" || gauge != 0 || exists(ws) {
		t.Errorf("after the fix: %q (%s) gauge %v, workspace there %v", e.Action, e.Reason, gauge, exists(ws))
	}
	if b, err := os.ReadFile(filepath.Join(state, quarantineFile)); err != nil || len(b) == 0 || string(b) != "{\n  \"version\": 1,\n  \"sandboxes\": []\n}\n" {
		t.Errorf("state after the reap: %q %v", b, err)
	}
}
