package teardown

import (
	"context"
	"time"
)

// Runner runs plans on an engine the one way every front end does (kill,
// the screen, the reaper): the teardown, then, when asked and only after a
// clean one, the runtime's own reconcile command, then the audit record,
// whatever the teardown came to. A record is appended for every plan run,
// so the log never lacks a teardown that happened.
type Runner struct {
	Engine *Engine
	// Via names the front end in the audit record ("kill", "tui", "reap").
	Via string
	// Audit is the audit log; "" appends nothing.
	Audit string
	// Reconcile runs the plan's reconcile command after a clean teardown.
	Reconcile bool
}

// Outcome is what came of one plan.
type Outcome struct {
	Totals Totals
	// Reconciled is the reconcile step's event when one was due (its
	// Status says how it went), nil when none was.
	Reconciled *Event
	// AuditErr says why the record could not be appended.
	AuditErr error
}

// OK reports a clean teardown whose reconcile, if any, did not fail.
func (o Outcome) OK() bool {
	return o.Totals.OK() && (o.Reconciled == nil || o.Reconciled.Status != Fail)
}

// Run tears p down, emitting each event. reason, when not "", is the audit
// record's reason (the reaper's evidence for acting on its own).
func (r *Runner) Run(ctx context.Context, p *Plan, emit func(Event), reason string) Outcome {
	out := Outcome{Totals: r.Engine.Run(ctx, p, emit)}
	if r.Reconcile && len(p.Reconcile) > 0 {
		if !out.Totals.OK() {
			ev := Event{Time: time.Now(), Sandbox: p.Target, Step: StepReconcile, Status: Skip,
				Detail: "processes survive or a step failed: " + p.Runtime + " is not told"}
			emit(ev)
			out.Reconciled = &ev
		} else {
			ev := RunReconcile(ctx, p, emit)
			out.Reconciled = &ev
		}
	}
	if r.Audit != "" {
		rec := NewAuditRecord(r.Via, p, out.Totals)
		if reason != "" {
			rec.Reason = reason
		}
		out.AuditErr = AppendAudit(r.Audit, rec)
	}
	return out
}
