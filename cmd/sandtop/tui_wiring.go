package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/gcpace"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/hostview"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/oneproc"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
	"github.com/sandtop/sandtop/ui"
)

// newScanSource is the live screen's and serve's ui.Source: the host
// source, with the long-running commands' heap tuning after each scan,
// and narrowing to one processor when procs is not nil (the screen). The
// caller owns the scanner and closes it.
func newScanSource(sc *proc.Scanner, rules model.Rules, procs *oneproc.Narrower) *hostview.Source {
	heap := gcpace.LongRunning()
	return hostview.NewSource(sc, rules, 0, func() {
		heap.Refreshed()
		procs.Refreshed()
	})
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
	o.ProcRoot = k.eng.ProcRoot()
	if t.Sandbox != "" {
		sb := v.Sandbox(t.Sandbox)
		if sb == nil {
			return nil, fmt.Errorf("sandbox %s: gone", t.Sandbox)
		}
		return teardown.PlanSandbox(v, sb, o)
	}
	p := v.Snapshot.Proc(t.Process.PID)
	if p == nil || p.Start != t.Process.Start {
		return nil, fmt.Errorf("pid %d: exited", t.Process.PID)
	}
	return teardown.PlanSubtree(v, t.Process.PID, o)
}

// Run runs the plan through the one teardown runner, which appends its
// audit record whatever the teardown came to.
func (k *engineKiller) Run(ctx context.Context, p *teardown.Plan, emit func(teardown.Event)) ui.Outcome {
	runner := teardown.Runner{Engine: k.eng, Via: "tui", Audit: k.audit}
	res := runner.Run(ctx, p, emit, "")
	return ui.Outcome{Totals: res.Totals, Audit: k.audit, AuditErr: res.AuditErr}
}
