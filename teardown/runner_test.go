package teardown

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
)

// TestRunnerRecordsAndReconciles runs two plans through one Runner: a
// clean teardown is reconciled and recorded; a plan whose reconcile
// command fails still gets its record, and the outcome says it failed. The
// reaper's reason replaces the record's default.
func TestRunnerRecordsAndReconciles(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "good", Runtime: fleet.VM0},
		{Name: "bad", Runtime: fleet.VM0},
	}})
	m := f.Manifest()
	rules := model.Effective(nil, true)
	v := fleettest.View(t, rules)
	eng, err := New(Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r := &Runner{Engine: eng, Via: "test", Audit: audit, Reconcile: true}
	var outcomes []Outcome
	for i, tc := range []struct {
		name      string
		reconcile []string
	}{{"good", []string{"true"}}, {"bad", []string{"false"}}} {
		sb, err := v.Resolve(m.Sandbox(tc.name).ID)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanSandbox(v, sb, PlanOptions{Grace: time.Second, Protected: eng.Protected()})
		if err != nil {
			t.Fatal(err)
		}
		p.Reconcile = tc.reconcile
		reason := ""
		if i == 1 {
			reason = "reaper: because"
		}
		outcomes = append(outcomes, r.Run(context.Background(), p, func(Event) {}, reason))
	}
	if o := outcomes[0]; !o.OK() || o.Reconciled == nil || o.Reconciled.Status != OK || o.AuditErr != nil {
		t.Errorf("clean teardown with a reconcile that succeeds: ok %v, reconcile %+v, audit %v", o.OK(), o.Reconciled, o.AuditErr)
	}
	if o := outcomes[1]; o.OK() || !o.Totals.OK() || o.Reconciled == nil || o.Reconciled.Status != Fail {
		t.Errorf("clean teardown with a reconcile that fails: ok %v, totals ok %v, reconcile %+v", o.OK(), o.Totals.OK(), o.Reconciled)
	}
	fh, err := os.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var recs []AuditRecord
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var rec AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 2 || recs[0].Via != "test" || recs[1].Reason != "reaper: because" {
		t.Fatalf("audit records: %+v", recs)
	}
}
