package ui

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/teardown"
)

// plansFor plans sandboxes of the fixture fleet with the fake killer.
func plansFor(t *testing.T, k Killer, ids ...string) []*teardown.Plan {
	t.Helper()
	v := fleetViews(1)[0]
	var out []*teardown.Plan
	for _, id := range ids {
		p, err := k.Plan(v, Target{Sandbox: id}, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func auditRecords(t *testing.T, path string) []teardown.AuditRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []teardown.AuditRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r teardown.AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// TestRunBatchStreamsAndAudits runs a batch of two plans and reads its
// channel as the UI does: every event arrives in order, each plan ends
// with a done message, and the audit log holds one record per plan.
func TestRunBatchStreamsAndAudits(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	k := &fakeKiller{audit: audit}
	r := newRuns()
	b := &batch{id: 1, plans: plansFor(t, k, idOrphan, idPaused), ch: make(chan tea.Msg)}
	go runBatchCmd(r, k, b)()

	var steps []string
	var done []string
	for {
		msg := waitBatchCmd(b)()
		switch msg := msg.(type) {
		case teardownEventMsg:
			steps = append(steps, msg.ev.Sandbox+" "+string(msg.ev.Step))
		case teardownPlanDoneMsg:
			if msg.auditErr != nil || msg.audit != audit {
				t.Errorf("audit %q: %v", msg.audit, msg.auditErr)
			}
			done = append(done, msg.target)
		case teardownBatchDoneMsg:
			// The plans run together: each target's events are in
			// order, the targets' may interleave.
			if !slices.Equal(slices.Sorted(slices.Values(done)), slices.Sorted(slices.Values([]string{idOrphan, idPaused}))) {
				t.Errorf("plans done %v", done)
			}
			for _, id := range []string{idOrphan, idPaused} {
				var own []string
				for _, s := range steps {
					if st, ok := strings.CutPrefix(s, id+" "); ok {
						own = append(own, st)
					}
				}
				if len(own) < 2 || own[0] != "plan" || own[len(own)-1] != "done" {
					t.Errorf("%s: events out of order: %v", id, own)
				}
			}
			recs := auditRecords(t, audit)
			slices.SortFunc(recs, func(a, b teardown.AuditRecord) int { return strings.Compare(a.Target, b.Target) })
			if len(recs) != 2 || recs[0].Via != "tui" || recs[0].Target != idOrphan || recs[1].Target != idPaused {
				t.Fatalf("audit records %+v", recs)
			}
			if recs[0].Totals.Killed != 2 {
				t.Errorf("audit totals %+v, want 2 killed", recs[0].Totals)
			}
			return
		default:
			t.Fatalf("unexpected message %T", msg)
		}
	}
}

// TestShutdownWaitsForAudit quits while a teardown is held mid-way: the
// shutdown cancels it and returns only once its audit record is written.
// A batch whose command only starts after the shutdown never runs.
func TestShutdownWaitsForAudit(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	k := &fakeKiller{release: make(chan struct{}), audit: audit}
	r := newRuns()
	b := &batch{id: 1, plans: plansFor(t, k, idOrphan), ch: make(chan tea.Msg, 64)}
	go runBatchCmd(r, k, b)()
	// Wait for the pin event: the run is now parked on release.
	for msg := range b.ch {
		if ev, ok := msg.(teardownEventMsg); ok && ev.ev.Step == teardown.StepPin {
			break
		}
	}
	stopped := make(chan struct{})
	go func() { r.shutdown(true); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown did not return")
	}
	if recs := auditRecords(t, audit); len(recs) != 1 || recs[0].Target != idOrphan {
		t.Fatalf("audit after shutdown: %+v", recs)
	}

	late := &batch{id: 2, plans: plansFor(t, k, idPaused), ch: make(chan tea.Msg, 64)}
	runBatchCmd(r, k, late)()
	if got := k.runs(); !slices.Equal(got, []string{idOrphan}) {
		t.Errorf("runs after shutdown: %v", got)
	}
	if _, ok := <-late.ch; ok {
		t.Errorf("a late batch sent a message")
	}
}

// TestShutdownLetsTeardownFinish is the screen going away without the
// operator asking to stop (its terminal closed): the teardown is not
// cancelled, nobody reads its events any more, and the shutdown returns
// only once it has finished as confirmed and written its audit record.
func TestShutdownLetsTeardownFinish(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	k := &fakeKiller{release: make(chan struct{}), audit: audit}
	r := newRuns()
	// No room for the events: a send that blocked would hang the shutdown.
	b := &batch{id: 1, plans: plansFor(t, k, idOrphan), ch: make(chan tea.Msg)}
	go runBatchCmd(r, k, b)()
	<-b.ch // the plan event: the run has started
	stopped := make(chan struct{})
	go func() { r.shutdown(false); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("shutdown returned while the teardown was still running: it was cancelled")
	case <-time.After(200 * time.Millisecond):
	}
	close(k.release)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown did not return after the teardown finished")
	}
	recs := auditRecords(t, audit)
	if len(recs) != 1 || recs[0].Totals.Killed != 2 {
		t.Fatalf("audit after shutdown: %+v", recs)
	}
}

func TestScanCmdNamesUsers(t *testing.T) {
	calls := 0
	lookup := func(uid int) string { calls++; return testLookup(uid) }
	src := &fakeSource{views: fleetViews(1)}
	msg := scanCmd(src, model.ResourceNeeds{}, nil, lookup)().(viewMsg)
	want := map[int]string{0: "root", 101: "nginx", 1000: "alice"}
	for uid, name := range want {
		if msg.users[uid] != name {
			t.Errorf("users[%d] = %q, want %q", uid, msg.users[uid], name)
		}
	}
	first := calls
	again := scanCmd(src, model.ResourceNeeds{}, msg.users, lookup)().(viewMsg)
	if calls != first {
		t.Errorf("known uids looked up again (%d lookups)", calls-first)
	}
	if len(again.users) != len(msg.users) {
		t.Errorf("users changed: %v", again.users)
	}
}
