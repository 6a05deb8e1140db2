package ui

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
)

// Source produces views of the host. Scan is called from a tea.Cmd, never
// from Update, and never twice at once.
type Source interface {
	Scan() (*model.View, error)
}

// Killer plans and runs teardowns. The ui is given a nil Killer in
// read-only mode, so no code path in it can reach a signal.
type Killer interface {
	// Plan plans the teardown of one target of v. It does no I/O.
	Plan(v *model.View, t Target, grace time.Duration) (*teardown.Plan, error)
	// Run executes a plan, calling emit for each step as it happens.
	Run(ctx context.Context, p *teardown.Plan, emit func(teardown.Event)) teardown.Totals
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

// ScanSource is the real Source: a proc.Scanner and a model.Builder. It
// hands each view back to the next Build, which keeps attribution sticky
// for processes that stop matching while they live.
type ScanSource struct {
	mu   sync.Mutex
	sc   *proc.Scanner
	b    *model.Builder
	prev *model.View
}

// NewScanSource groups the scanner's snapshots with rules. The caller owns
// the scanner and closes it.
func NewScanSource(sc *proc.Scanner, rules model.Rules) *ScanSource {
	return &ScanSource{sc: sc, b: model.NewBuilder(rules)}
}

// Scan reads the host once and groups it.
func (s *ScanSource) Scan() (*model.View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := s.sc.Scan()
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	s.prev = s.b.Build(snap, s.prev)
	return s.prev, nil
}

// EngineKiller is the real Killer, a teardown.Engine.
type EngineKiller struct {
	eng      *teardown.Engine
	deadline time.Duration
}

// NewEngineKiller wraps an engine; deadline bounds each teardown's verify
// loop (teardown.DefaultDeadline when 0).
func NewEngineKiller(eng *teardown.Engine, deadline time.Duration) *EngineKiller {
	return &EngineKiller{eng: eng, deadline: deadline}
}

// Plan plans a sandbox or a subtree with the engine's protected pids. A
// target that is gone from v is an error: the operator picked it from an
// older view.
func (k *EngineKiller) Plan(v *model.View, t Target, grace time.Duration) (*teardown.Plan, error) {
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

// Run runs the plan on the engine.
func (k *EngineKiller) Run(ctx context.Context, p *teardown.Plan, emit func(teardown.Event)) teardown.Totals {
	return k.eng.Run(ctx, p, emit)
}
