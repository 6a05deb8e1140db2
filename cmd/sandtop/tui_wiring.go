package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/hostview"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
	"github.com/sandtop/sandtop/ui"
)

// scanSource is the live screen's ui.Source: a proc.Scanner and a
// model.Builder. It hands each view back to the next Build, which keeps
// attribution sticky for processes that stop matching while they live.
type scanSource struct {
	mu   sync.Mutex
	sc   *proc.Scanner
	b    *model.Builder
	lo   *hostview.Finder
	prev *model.View
	heap *heapTuner
}

// newScanSource groups the scanner's snapshots with rules. The caller owns
// the scanner and closes it.
func newScanSource(sc *proc.Scanner, rules model.Rules) *scanSource {
	return &scanSource{sc: sc, b: model.NewBuilder(rules), lo: hostview.NewFinder(model.NewLeftovers(rules), 0), heap: longRunning()}
}

// Scan reads the host once and groups it.
func (s *scanSource) Scan() (*model.View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.sc.Scan()
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	// What the leftover search could not read stays out of the view; the
	// rest of it is still worth showing.
	s.prev, _ = s.lo.Add(s.b.Build(snap, s.prev))
	s.heap.refreshed()
	return s.prev, nil
}

// engineKiller is the live screen's ui.Killer: a teardown.Engine, and the
// audit log each teardown is appended to.
type engineKiller struct {
	eng      *teardown.Engine
	deadline time.Duration
	audit    string
}

// newEngineKiller wraps an engine; deadline bounds each teardown's verify
// loop (teardown.DefaultDeadline when 0); audit is the audit log ("" for
// none).
func newEngineKiller(eng *teardown.Engine, deadline time.Duration, audit string) *engineKiller {
	return &engineKiller{eng: eng, deadline: deadline, audit: audit}
}

// Plan plans a sandbox or a subtree with the engine's protected pids. A
// target that is gone from v is an error: the operator picked it from an
// older view.
func (k *engineKiller) Plan(v *model.View, t ui.Target, grace time.Duration) (*teardown.Plan, error) {
	o := teardown.PlanOptions{Grace: grace, Deadline: k.deadline, Protected: k.eng.Protected()}
	if t.Sandbox != "" {
		sb := v.Sandbox(t.Sandbox)
		if sb == nil {
			return nil, fmt.Errorf("sandbox %s: gone", t.Sandbox)
		}
		return teardown.PlanSandbox(v, sb, o)
	}
	p := v.Snapshot.ByPID[t.Process.PID]
	if p == nil || p.Start != t.Process.Start {
		return nil, fmt.Errorf("pid %d: exited", t.Process.PID)
	}
	return teardown.PlanSubtree(v, t.Process.PID, o)
}

// Run runs the plan on the engine and appends its audit record, whatever
// the teardown came to.
func (k *engineKiller) Run(ctx context.Context, p *teardown.Plan, emit func(teardown.Event)) ui.Outcome {
	o := ui.Outcome{Totals: k.eng.Run(ctx, p, emit), Audit: k.audit}
	if k.audit != "" {
		o.AuditErr = teardown.AppendAudit(k.audit, teardown.NewAuditRecord("tui", p, o.Totals))
	}
	return o
}
