package ui

import (
	"context"
	"fmt"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
)

// The ui knows its inputs only as these interfaces: the command wiring
// (cmd/sandtop) gives it a scanner-backed Source and an engine-backed
// Killer, tests give it fakes.

// Source produces views of the host. Scan is called from a tea.Cmd, never
// from Update, and never twice at once.
type Source interface {
	Scan() (*model.View, error)
}

// NeedsSource is a Source that can read less: only the cgroup figures
// the screen shows (its columns, the sandbox in its detail pane).
type NeedsSource interface {
	Source
	SetResourceNeeds(model.ResourceNeeds)
}

// Recorder is a Source that also writes every scan to a file (sandtop
// --record): the header says so, with the file and its size, because
// every command line on the host is going to disk.
type Recorder interface {
	Source
	// Recording describes the recording after the last scan: its path,
	// its size in bytes, and why it stopped ("" while it goes on).
	Recording() RecordingState
}

// RecordingState is what the header shows of a recording.
type RecordingState struct {
	Path    string
	Size    int64
	Stopped string
}

// Killer plans, runs and records teardowns. The ui is given a nil Killer
// in read-only mode, so no code path in it can reach a signal.
type Killer interface {
	// Plan plans the teardown of one target of v. It does no I/O.
	Plan(v *model.View, t Target, grace time.Duration) (*teardown.Plan, error)
	// Run executes a plan, calling emit for each step as it happens, and
	// appends its audit record before it returns.
	Run(ctx context.Context, p *teardown.Plan, emit func(teardown.Event)) Outcome
}

// Outcome is what one teardown came to, and where it was recorded.
type Outcome struct {
	Totals teardown.Totals
	// Audit is the audit log the record was appended to; "" when none is
	// configured.
	Audit string
	// AuditErr says why the record could not be appended.
	AuditErr error
}

// Target is what the operator asked to tear down: a sandbox, or the
// process subtree rooted at one identity.
type Target struct {
	// Sandbox is the sandbox ID; "" for a process subtree.
	Sandbox string
	// Process is the subtree's root, named by identity so that a recycled
	// pid is never taken for it.
	Process proc.Identity
}

func (t Target) String() string {
	if t.Sandbox != "" {
		return t.Sandbox
	}
	return fmt.Sprintf("pid %d", t.Process.PID)
}
