package reap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/hostview"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
)

// MinFor is the shortest --for a reaper that runs on an interval may use
// with --apply: a supervisor restart (containerd's, a runner replaced) takes
// seconds, and a window shorter than that would reap what it is about to
// take back.
const MinFor = time.Minute

// minFor is MinFor; tests that run the reaper's loop in seconds lower it.
var minFor = MinFor

// Config is how a Reaper runs.
type Config struct {
	Policy
	// Selects are the selection: a sandbox is selected when any of them
	// matches it. Texts are the same, as typed, for the log.
	Selects []query.Query
	Texts   []string
	// Interval is the pause between passes.
	Interval time.Duration
	// Once runs a single pass (after watching for For, when For > 0).
	Once bool
	// Apply tears down; without it, every decision is logged and nothing
	// is touched.
	Apply bool
	// Grace and Deadline are the teardown's (see teardown.PlanOptions).
	Grace, Deadline time.Duration
	// AuditPath is the audit log every teardown is appended to.
	AuditPath string
	// StateDir holds the quarantine's state (DefaultStateDir when "");
	// QuarantineAfter is how many failed teardowns in a row quarantine a
	// sandbox (DefaultQuarantineAfter when 0); RetryQuarantined releases
	// the quarantined for one more try each.
	StateDir         string
	QuarantineAfter  int
	RetryQuarantined bool
}

// Check refuses what would make the reaper unsafe: --apply with a
// selection some query of which is not restricted by a badge (a typo must
// not kill healthy sandboxes), and --apply with --for under MinFor unless
// --once.
func (c Config) Check() error {
	if len(c.Selects) == 0 {
		return errors.New("no selection")
	}
	if !c.Apply {
		return nil
	}
	for i, q := range c.Selects {
		if !q.Restricts(query.Badge) {
			return fmt.Errorf("--apply with --select %q: the selection must be restricted by a badge (badge:orphan, badge:leftover, …), so that a typo cannot reap healthy sandboxes", c.Texts[i])
		}
	}
	if c.For < minFor && !c.Once {
		return fmt.Errorf("--apply with --for %s: under %s only with --once (a supervisor restarting within the window must not lose its sandboxes)", c.For, MinFor)
	}
	return nil
}

// Reaper scans, decides with its Tracker, and tears down through the
// engine.
type Reaper struct {
	cfg     Config
	rules   model.Rules
	src     *hostview.Source
	eng     *teardown.Engine
	tracker *Tracker
	quar    *Quarantine
	log     *Logger
	metrics *Metrics
	pass    int
	failed  int
	now     func() time.Time
	// beforeTeardown, when set, runs after a candidate's plan is made and
	// before the engine runs it (tests provoke pid reuse there).
	beforeTeardown func(*teardown.Plan)
	// Observe, when set, is given every scan the reaper makes (serve's
	// exporter, so that --listen serves serve's metrics beside its own).
	Observe func(v *model.View, err error, took time.Duration)
}

// New makes a reaper. The scanner and the engine are the caller's; the
// engine should verify with the same scanner.
func New(cfg Config, rules model.Rules, sc *proc.Scanner, eng *teardown.Engine, log *Logger, m *Metrics) (*Reaper, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	after := cmp.Or(cfg.QuarantineAfter, DefaultQuarantineAfter)
	q, err := LoadQuarantine(cmp.Or(cfg.StateDir, DefaultStateDir), after, cfg.RetryQuarantined)
	if err != nil && cfg.Apply {
		return nil, err
	}
	if err != nil {
		// A dry run tears nothing down and saves nothing: a state it
		// cannot read (not root) only hides what is quarantined.
		q = &Quarantine{after: after, m: map[string]*Failures{}}
	}
	m.setQuarantined(q.ByRuntime())
	return &Reaper{
		cfg: cfg, rules: rules, eng: eng, log: log, metrics: m,
		src:     hostview.NewSource(sc, rules, hostview.WalkEveryScan, nil),
		tracker: NewTracker(cfg.Policy), quar: q, now: time.Now,
	}, nil
}

// Failed counts the teardowns that did not complete.
func (r *Reaper) Failed() int { return r.failed }

// Run passes every Interval until ctx ends or stop is closed (SIGTERM): a
// teardown under way when stop closes runs to its end (thaw, verify,
// audit), then Run returns. With Once it watches for For, then passes
// once.
func (r *Reaper) Run(ctx context.Context, stop <-chan struct{}) error {
	start := r.now()
	for {
		final := !r.cfg.Once || !r.now().Before(start.Add(r.cfg.For))
		if err := r.Pass(ctx, stop, final); err != nil {
			return err
		}
		if r.cfg.Once && final {
			return nil
		}
		wait := r.cfg.Interval
		if r.cfg.Once {
			wait = min(wait, max(start.Add(r.cfg.For).Sub(r.now()), 0))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-stop:
			return nil
		case <-time.After(wait):
		}
	}
}

// Pass scans once, feeds the tracker and, when act, logs every decision
// and reaps what is due (a pass that does not act only watches).
func (r *Reaper) Pass(ctx context.Context, stop <-chan struct{}, act bool) error {
	v, err := r.view()
	if err != nil {
		return err
	}
	r.pass++
	decisions, byRuntime := r.observe(v)
	r.metrics.setCandidates(byRuntime)
	if !act {
		return nil
	}
	// A sandbox no longer selected needs no memory of its failures.
	seen := map[string]bool{}
	for _, d := range decisions {
		seen[d.Key] = true
	}
	r.quar.Keep(seen)
	for _, d := range decisions {
		e := r.entry(v, d)
		q := r.quar.Blocked(d.Key, d.Identity)
		switch {
		case d.Action == Reap && q != nil:
			e.Action, e.Quarantine = "quarantined", q
			e.Reason += fmt.Sprintf("; quarantined since %s after %d failed teardowns (last: %s): not tried again until its evidence changes or --retry-quarantined", q.Since.UTC().Format(time.RFC3339), q.Count, q.LastError)
			r.metrics.skip("quarantined")
		case d.Action != Reap:
			e.Action = string(d.Action)
			r.metrics.skip(d.Skip)
		case !r.cfg.Apply:
			e.Action = "would-reap"
			if p, err := r.plan(v, d.Key); err == nil {
				e.Plan = describePlan(p)
			} else {
				e.Reason += "; would be refused: " + err.Error()
			}
			r.metrics.skip("dry-run")
		case stopped(stop) || ctx.Err() != nil:
			e.Action = "skip"
			e.Reason += "; stopping (SIGTERM): not started"
			r.metrics.skip("stopping")
		default:
			e = r.reap(ctx, d, e)
		}
		r.log.Log(e)
	}
	r.metrics.setQuarantined(r.quar.ByRuntime())
	if r.cfg.Apply {
		if err := r.quar.Save(); err != nil {
			return err
		}
	}
	return nil
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// observe feeds one scan to the tracker: the selected sandboxes of v.
func (r *Reaper) observe(v *model.View) ([]Decision, map[string]int) {
	var seen []Seen
	byRuntime := map[string]int{}
	for _, sb := range v.Sandboxes {
		if r.selected(sb) {
			seen = append(seen, SeenOf(v, sb))
			byRuntime[sb.Runtime]++
		}
	}
	return r.tracker.Observe(v.Time, seen), byRuntime
}

// reap re-reads the host and, when the sandbox is still due (selected
// under the identity the tracker timed, for --for), tears it down and
// appends the audit record with the reaper's reason. The re-read is a scan
// like any other and goes to the tracker: while a pass's teardowns take
// their time, a supervisor that comes back is still seen.
func (r *Reaper) reap(ctx context.Context, d Decision, e Entry) Entry {
	v, err := r.view()
	if err != nil {
		e.Action, e.Reason = "skip", e.Reason+"; rescan failed: "+err.Error()
		r.metrics.skip("changed")
		return e
	}
	now, _ := r.observe(v)
	i := slices.IndexFunc(now, func(n Decision) bool { return n.Key == d.Key })
	switch {
	case v.Sandbox(d.Key) == nil:
		e.Action, e.Reason = "skip", e.Reason+"; gone before the teardown"
		r.metrics.skip("changed")
		return e
	case i < 0:
		e.Action, e.Reason = "skip", e.Reason+"; no longer selected before the teardown: its clock starts again"
		r.metrics.skip("changed")
		return e
	case now[i].Identity != d.Identity:
		e.Action, e.Reason = "skip", e.Reason+"; changed before the teardown (now "+now[i].Identity+"): its clock starts again"
		r.metrics.skip("changed")
		return e
	case now[i].Action != Reap && now[i].Action != Defer:
		e.Action, e.Reason = "skip", e.Reason+"; no longer due before the teardown ("+now[i].Reason+")"
		r.metrics.skip(now[i].Skip)
		return e
	}
	p, err := r.plan(v, d.Key)
	if err != nil {
		e.Action, e.Reason = "skip", e.Reason+"; refused: "+err.Error()
		r.metrics.skip("refused")
		return e
	}
	e.Plan = describePlan(p)
	if r.beforeTeardown != nil {
		r.beforeTeardown(p)
	}
	// The teardown is not given ctx's cancellation by SIGTERM (stop is a
	// separate channel): once started it finishes its thaw, verify and
	// audit record.
	runner := teardown.Runner{Engine: r.eng, Via: "reap", Audit: r.cfg.AuditPath}
	reason := "reaper: " + e.Reason + "; " + e.Evidence + "; selection " + strings.Join(quoted(r.cfg.Texts), " or ")
	res := runner.Run(context.WithoutCancel(ctx), p, func(ev teardown.Event) {
		if ev.Status == teardown.Fail {
			e.Failures = append(e.Failures, ev.Text())
		}
	}, reason)
	t := res.Totals
	e.Result = &t
	e.Action = "reaped"
	if !t.OK() {
		e.Action = "failed"
		r.failed++
		why := strings.Join(e.Failures, "; ")
		if why == "" {
			why = fmt.Sprintf("%d survivors", len(t.Survivors))
		}
		if f := r.quar.Failed(d.Key, d.ID, d.Runtime, d.Identity, why, r.now()); f.Quarantined() {
			e.Quarantine = f
			e.Reason += fmt.Sprintf("; failed %d times in a row: quarantined", f.Count)
		}
	} else {
		r.quar.Succeeded(d.Key)
	}
	r.metrics.teardown(p.Runtime, t.OK())
	if res.AuditErr != nil {
		e.Failures = append(e.Failures, "audit: "+res.AuditErr.Error())
	}
	return e
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func (r *Reaper) plan(v *model.View, key string) (*teardown.Plan, error) {
	sb := v.Sandbox(key)
	if sb == nil {
		return nil, fmt.Errorf("sandbox %s: gone", key)
	}
	return teardown.PlanSandbox(v, sb, teardown.PlanOptions{Grace: r.cfg.Grace, Deadline: r.cfg.Deadline, Protected: r.eng.Protected()})
}

func (r *Reaper) selected(sb *model.Sandbox) bool {
	for _, q := range r.cfg.Selects {
		if q.Sandbox(sb) {
			return true
		}
	}
	return false
}

// view scans the host and groups it, leftovers included.
func (r *Reaper) view() (*model.View, error) {
	start := time.Now()
	v, err := r.src.Scan()
	if err != nil {
		if r.Observe != nil {
			r.Observe(nil, err, time.Since(start))
		}
		return nil, err
	}
	if r.Observe != nil {
		r.Observe(v, nil, time.Since(start))
	}
	return v, nil
}

func (r *Reaper) entry(v *model.View, d Decision) Entry {
	e := Entry{
		Time: v.Time.UTC(), Pass: r.pass, ID: d.ID, Key: d.Key, Runtime: d.Runtime, Badges: d.Badges, Identity: d.Identity,
		Reason: d.Reason, Evidence: d.Evidence,
		MatchedSeconds: d.MatchedFor.Round(time.Second).Seconds(), ForSeconds: r.cfg.For.Seconds(),
		AgeSeconds: d.Age.Round(time.Second).Seconds(), MinAgeSeconds: r.cfg.MinAge.Seconds(),
	}
	if sb := v.Sandbox(d.Key); sb != nil {
		e.Namespace = sb.Namespace
		e.Processes = len(sb.Members)
		for _, l := range sb.Leftovers {
			e.Leftovers = append(e.Leftovers, l.JSON(v.Time))
		}
	}
	return e
}
