// Package teardown removes every process of a sandbox, or says exactly
// which survived and why. It is the only package of sandtop's own that
// sends a signal or writes a cgroup file (the binary also links sandsim's
// fake fleet, which signals and freezes its own processes for `sandtop
// demo`), and every signal goes through a pidfd pinned to a (pid, start
// time) identity.
package teardown

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/words"
	"github.com/sandtop/sandtop/proc"
)

// Options configure an Engine.
type Options struct {
	ProcRoot string
	SysRoot  string
	// Rules are the rules the plan's view was built with; verify re-groups
	// a fresh scan with them.
	Rules model.Rules
	// Scanner, when set, is used for the verify scans: a scanner that has
	// already read the host (the TUI's, or the one the CLI planned with)
	// makes a verify round a steady refresh instead of a cold read of
	// every process's static fields. Scanners serialise their scans, so it
	// may be shared.
	Scanner *proc.Scanner
}

// Engine runs teardown plans. One engine serves any number of teardowns,
// one at a time or concurrently (each Run has its own state).
type Engine struct {
	procRoot string
	sysRoot  string
	rules    model.Rules
	scanner  *proc.Scanner
	// protected are sandtop and its ancestors, read when the engine was
	// made; Refuse re-derives them from each snapshot as well.
	protected map[int]bool
	now       func() time.Time
	// scans counts the host scans teardowns made, each a read of every
	// process's stat: tests check that a teardown scans only when it must.
	scans atomic.Int64
}

// New makes an engine. It records sandtop's own ancestry, which no plan may
// touch.
func New(o Options) (*Engine, error) {
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	prot, err := SelfAndAncestors(o.ProcRoot)
	if err != nil {
		return nil, fmt.Errorf("teardown: %w", err)
	}
	return &Engine{procRoot: o.ProcRoot, sysRoot: o.SysRoot, rules: o.Rules, scanner: o.Scanner, protected: prot, now: time.Now}, nil
}

// Protected returns the pids this engine will never signal besides PID 1
// and kernel threads; plans should be made with it.
func (e *Engine) Protected() map[int]bool { return e.protected }

// ProcRoot is the procfs the engine reads; plans should be made with it.
func (e *Engine) ProcRoot() string { return e.procRoot }

// run is the state of one teardown.
type run struct {
	e     *Engine
	p     *Plan
	emit  func(Event)
	start time.Time
	// pins holds every live pinned process of the target, by identity;
	// order is the signalling order (leaf first; late-born appended).
	pins  map[proc.Identity]*Pinned
	order []proc.Identity
	byPID map[int]proc.Identity
	// gone counts identities that had exited before we could signal them.
	gone map[proc.Identity]bool
	// dead counts pinned processes seen to exit.
	dead   map[proc.Identity]bool
	failed int
	// thawV1 is set once the v1 freezer was frozen by us: whatever else
	// happens, it must be thawed again, or its tasks hang forever.
	thawV1 bool
	// thawedOwned is set once thawOwned ran.
	thawedOwned bool
	// reasons remembers why a process could not be signalled, for the
	// survivor report.
	reasons map[proc.Identity]string
	// failedSig is the signal whose failure reasons holds, so a failure is
	// reported once per process and signal.
	failedSig map[proc.Identity]unix.Signal
	// denied marks processes that refused a signal with EPERM.
	denied map[proc.Identity]bool
	// cleanupEv is the last cleanup event, results what became of each
	// leftover (the done event's Totals carry them to the audit record).
	cleanupEv Event
	results   []LeftoverResult
	// killed marks processes SIGKILL was delivered to, one by one or by
	// cgroup.kill: a survivor of a stopped teardown is told apart by it.
	killed map[proc.Identity]bool
	// cgroupKilled is set once cgroup.kill was written to the dedicated
	// cgroup.
	cgroupKilled bool
	// termed marks processes SIGTERM was delivered to.
	termed map[proc.Identity]bool
	// unreaped are the target's zombies a parent outside it has yet to
	// reap, as the last verify found them.
	unreaped []Survivor
	// relays are the target's ancestors outside it that were running
	// when the teardown began (see noteRelays).
	relays []relay
	// stopped says when the operator stopped the teardown ("" when
	// nobody did): the record must not claim what never happened.
	stopped string
	// sc is the verify scanner, made on first use and kept so each verify
	// round re-reads only what changed.
	sc       *proc.Scanner
	lastSnap *proc.Snapshot
	// passes counts kill passes (the forced phase, then each verify round
	// that found something left and killed it); stopPasses the SIGSTOP
	// walk's passes over the tree, summed over every kill pass.
	passes, stopPasses int
	// lost is set when a member exited before the stop pass (see forced).
	lost bool
}

// Run executes the plan, calling emit for each step as it happens (emit is
// called from Run's goroutine only), and returns the totals that the done
// event also carries. Cancelling ctx stops the teardown early; a cgroup the
// engine froze is thawed even then.
func (e *Engine) Run(ctx context.Context, p *Plan, emit func(Event)) Totals {
	r := &run{
		e: e, p: p, emit: emit, start: e.now(),
		pins:      map[proc.Identity]*Pinned{},
		byPID:     map[int]proc.Identity{},
		gone:      map[proc.Identity]bool{},
		dead:      map[proc.Identity]bool{},
		reasons:   map[proc.Identity]string{},
		failedSig: map[proc.Identity]unix.Signal{},
		denied:    map[proc.Identity]bool{},
		killed:    map[proc.Identity]bool{},
		termed:    map[proc.Identity]bool{},
	}
	defer r.close()
	if p.LeftoverOnly() {
		return r.leftovers(ctx)
	}
	detail := fmt.Sprintf("%s; %s; %s", words.Count(len(p.Members), "process", "processes"), r.cgroupWord(), p.Strategy())
	if out := p.leftOut(); len(out) > 0 {
		detail += "; " + words.Count(len(out), "suspect", "suspects") + " outside the tree not signalled (kill --with-cgroup includes them)"
	}
	r.event(Event{Step: StepPlan, Status: OK, PID: p.RootPID, Detail: detail})

	r.pinMembers()
	r.noteRelays()
	if p.Grace > 0 && ctx.Err() == nil {
		r.graceful(ctx)
	}
	// A cancelled teardown (the operator quit) sends no SIGKILL it had not
	// sent yet; it still thaws what it froze, checks and reports.
	if ctx.Err() == nil {
		r.forced(ctx)
	}
	if ctx.Err() != nil {
		r.stopped = r.stoppedWhen()
	}
	r.thawFreezer()
	survivors := r.verify(ctx)
	r.resumeRelays()
	r.cleanup(ctx, len(survivors) == 0)
	t := Totals{
		Killed:      len(r.dead),
		AlreadyGone: len(r.gone),
		Survivors:   survivors,
		Unreaped:    r.unreaped,
		Failed:      r.failed,
		Elapsed:     e.now().Sub(r.start),
		Stopped:     r.stopped,
		Passes:      r.passes,
		StopPasses:  r.stopPasses,
	}
	status, detail := OK, fmt.Sprintf("%d killed, %d already gone, %d survivors in %s", t.Killed, t.AlreadyGone, len(t.Survivors), t.Elapsed.Round(time.Millisecond))
	if t.Passes > 0 {
		detail += ", " + words.Count(t.Passes, "kill pass", "kill passes")
	}
	if r.stopped != "" {
		detail += "; stopped by the operator " + r.stopped
	}
	if !t.OK() {
		status = Fail
	}
	done := Event{Step: StepDone, Status: status, Detail: detail, Totals: &t}
	if len(p.Reconcile) > 0 {
		done.Reconcile = p.Reconcile
		// Whether the runtime noticed is its to say (kill --reconcile asks
		// it): its own monitor may have recorded the exit, or not.
		done.Detail += "; if " + p.Runtime + " still lists it, tell it: run " + p.reconcileCommand()
	}
	r.event(done)
	return t
}

// finish emits the done event of a teardown that signalled nothing.
func (r *run) finish(detail string) Totals {
	t := Totals{Failed: r.failed, Elapsed: r.e.now().Sub(r.start), Leftovers: r.results}
	status := OK
	if !t.OK() {
		status = Fail
	}
	r.event(Event{Step: StepDone, Status: status, Detail: fmt.Sprintf("%s in %s", detail, t.Elapsed.Round(time.Millisecond)), Totals: &t})
	return t
}

func (r *run) cgroupWord() string {
	switch {
	case r.p.CgroupDir != "":
		return "dedicated cgroup " + r.p.Cgroup
	case r.p.FreezerDir != "":
		return "dedicated v1 freezer " + r.p.Freezer
	}
	return "no dedicated cgroup"
}

func (r *run) event(ev Event) {
	ev.Time = r.e.now()
	ev.Sandbox = r.p.Target
	if ev.Status == Fail {
		r.failed++
	}
	if ev.Step == StepCleanup {
		r.cleanupEv = ev
	}
	r.emit(ev)
}

// alreadyGone reports a cgroup that vanished under the engine as a
// skipped step, and returns true, when err says so.
func (r *run) alreadyGone(step Step, err error) bool {
	if !errors.Is(err, ErrCgroupGone) {
		return false
	}
	r.event(Event{Step: step, Status: Skip, Detail: "cgroup already removed (the runtime cleaned up): already gone"})
	return true
}

// fail emits a failed step for err, with its errno name and meaning.
func (r *run) fail(step Step, pid int, comm, sig string, err error) {
	errno, human := Describe(err)
	r.event(Event{Step: step, PID: pid, Comm: comm, Signal: sig, Status: Fail, Error: errno, Detail: human})
}

func (r *run) close() {
	for _, p := range r.pins {
		p.Close()
	}
	if r.sc != nil && r.sc != r.e.scanner {
		r.sc.Close()
	}
}

// pinMembers pins every member of the plan. A member that exited is
// counted as already gone; one whose pid now names another process is never
// signalled.
func (r *run) pinMembers() {
	pinned, fallback := 0, false
	for _, m := range r.p.Members {
		pin, err := Pin(r.e.procRoot, m.Identity)
		if err != nil {
			r.pinFailed(m.Identity, m.Comm, err)
			continue
		}
		fallback = fallback || pin.Fallback
		r.add(pin)
		pinned++
	}
	detail := fmt.Sprintf("%d of %s pinned by pidfd", pinned, words.Count(len(r.p.Members), "process", "processes"))
	if fallback {
		detail = fmt.Sprintf("%d of %s pinned; no pidfd_open on this kernel: signals use kill(2) after a start-time re-check", pinned, words.Count(len(r.p.Members), "process", "processes"))
	}
	r.event(Event{Step: StepPin, Status: OK, Detail: detail})
}

func (r *run) pinFailed(id proc.Identity, comm string, err error) {
	switch {
	case errors.Is(err, ErrZombie):
		r.gone[id] = true
		r.event(Event{Step: StepPin, PID: id.PID, Comm: comm, Status: Skip, Detail: "zombie: already exited, waits to be reaped"})
	case errors.Is(err, ErrGone):
		r.gone[id] = true
		r.event(Event{Step: StepPin, PID: id.PID, Comm: comm, Status: Skip, Error: "ESRCH", Detail: "already exited"})
	case errors.Is(err, ErrReused):
		// Not ours any more: counted neither as killed nor as a survivor.
		r.gone[id] = true
		r.event(Event{Step: StepPin, PID: id.PID, Comm: comm, Status: Skip, Detail: "pid reused by another process: not signalled"})
	default:
		r.reasons[id] = "could not be pinned: " + err.Error()
		r.fail(StepPin, id.PID, comm, "", err)
	}
}

func (r *run) add(p *Pinned) {
	if _, ok := r.pins[p.ID]; ok {
		p.Close()
		return
	}
	r.pins[p.ID] = p
	r.byPID[p.ID.PID] = p.ID
	r.order = append(r.order, p.ID)
}

// live returns the pinned processes not yet seen to exit, in signalling order.
func (r *run) live() []*Pinned {
	var out []*Pinned
	for _, id := range r.order {
		if p := r.pins[id]; p != nil && !r.dead[id] {
			if exited, err := p.Exited(); err == nil && exited {
				r.dead[id] = true
				continue
			}
			out = append(out, p)
		}
	}
	return out
}

// signal sends sig through a pin and reports the step. It returns false
// when the process turned out to be gone already.
func (r *run) signal(step Step, p *Pinned, sig unix.Signal, quiet bool) {
	if r.denied[p.ID] {
		return // EPERM once is EPERM for every signal: reported already
	}
	err := p.Signal(sig)
	name := model.SignalName(sig)
	switch {
	case err == nil:
		switch {
		case sig == unix.SIGKILL:
			r.killed[p.ID] = true
		case step == StepTerm && sig != unix.SIGCONT:
			r.termed[p.ID] = true
		}
		if !quiet {
			r.event(Event{Step: step, PID: p.ID.PID, Comm: p.Comm, Signal: name, Status: OK})
		}
	case errors.Is(err, ErrGone):
		r.dead[p.ID] = true
		if !quiet {
			r.event(Event{Step: step, PID: p.ID.PID, Comm: p.Comm, Signal: name, Status: Skip, Error: "ESRCH", Detail: "already exited"})
		}
	default:
		// Report a process's failure with a signal once: the stop walk and
		// the verify rounds try again, and an EPERM stays an EPERM.
		if _, seen := r.reasons[p.ID]; seen && r.failedSig[p.ID] == sig {
			return
		}
		_, human := Describe(err)
		r.reasons[p.ID] = name + " failed: " + human
		r.failedSig[p.ID] = sig
		r.denied[p.ID] = errors.Is(err, unix.EPERM)
		r.fail(step, p.ID.PID, p.Comm, name, err)
	}
}

// graceful thaws a frozen target, sends SIGTERM leaf first (each followed
// by SIGCONT, because a stopped process keeps SIGTERM pending until it is
// continued; a member with a halt signal gets that instead), and waits up
// to the grace for everything to exit.
func (r *run) graceful(ctx context.Context) {
	if r.p.FrozenV2 {
		r.step(StepThaw, "thawed "+r.p.Cgroup+" (a frozen task cannot act on SIGTERM)", Thaw(r.p.CgroupDir))
	}
	if r.p.FrozenV1 {
		r.step(StepThaw, "thawed v1 freezer "+r.p.Freezer+" (a frozen task cannot act on SIGTERM)", ThawV1(r.p.FreezerDir))
	}
	r.thawOwned("a frozen task cannot act on SIGTERM")
	halt := map[proc.Identity]unix.Signal{}
	for _, m := range r.p.Members {
		if m.Halt != 0 {
			halt[m.Identity] = m.Halt
		}
	}
	termed := r.live()
	for _, p := range termed {
		r.signal(StepTerm, p, cmp.Or(halt[p.ID], unix.SIGTERM), false)
		r.signal(StepTerm, p, unix.SIGCONT, true)
	}
	waitStart := r.e.now()
	wctx, cancel := graceContext(ctx, r.p.Grace)
	defer cancel()
	// A leaf can be gone before the wait starts: count it among those
	// that exited, not out of the total. A process that refused SIGTERM
	// with EPERM will not act on it: waiting for it would only burn the
	// grace.
	all := r.live()
	live := slices.DeleteFunc(slices.Clone(all), func(p *Pinned) bool { return r.denied[p.ID] })
	exited := r.graceWait(wctx, live, waitStart)
	for _, p := range exited {
		r.dead[p.ID] = true
	}
	left := len(live) - len(exited)
	took := r.e.now().Sub(waitStart).Round(time.Millisecond)
	refused := ""
	if n := len(all) - len(live); n > 0 {
		refused = words.Count(n, "process", "processes") + " refused SIGTERM with EPERM, not waited for; "
	}
	switch {
	case left == 0 && refused == "":
		r.event(Event{Step: StepWait, Status: OK, Detail: fmt.Sprintf("%s exited after SIGTERM in %s", words.All(len(termed), "process", "processes"), took)})
	case left == 0:
		r.event(Event{Step: StepWait, Status: OK, Detail: fmt.Sprintf("%s%d of the others exited in %s", refused, len(exited), took)})
	default:
		r.event(Event{Step: StepWait, Status: OK, Detail: fmt.Sprintf("%s%d of %d still running after %s: escalating to SIGKILL", refused, left, len(termed), took)})
	}
}

// graceTick is how often the grace wait says how long is left and who
// holds out.
const graceTick = time.Second

// graceWait waits for live to exit until wctx ends, and every graceTick
// says how much of the grace is left and which processes hold out (those
// the plan knew ignore or block SIGTERM marked so).
func (r *run) graceWait(wctx context.Context, live []*Pinned, start time.Time) []*Pinned {
	resists := map[proc.Identity]string{}
	for _, m := range r.p.Members {
		if m.Resists != "" {
			resists[m.Identity] = m.Resists
		}
	}
	var exited []*Pinned
	pending := live
	for len(pending) > 0 {
		tctx, cancel := context.WithTimeout(wctx, graceTick)
		ex, _ := WaitExit(tctx, pending)
		cancel()
		exited = append(exited, ex...)
		pending = slices.DeleteFunc(pending, func(p *Pinned) bool { return slices.Contains(ex, p) })
		if wctx.Err() != nil || len(pending) == 0 {
			break
		}
		left := r.p.Grace - r.e.now().Sub(start)
		if left < graceTick/2 {
			continue
		}
		names := make([]string, 0, len(pending))
		for _, p := range pending {
			n := fmt.Sprintf("%d %s", p.ID.PID, p.Comm)
			if why := resists[p.ID]; why != "" {
				n += " (" + why + ")"
			}
			names = append(names, n)
		}
		if len(names) > 8 {
			names = append(names[:8], fmt.Sprintf("and %d more", len(names)-8))
		}
		r.event(Event{Step: StepWait, Status: Skip, Detail: fmt.Sprintf("%s of the grace left; holding out: %s", left.Round(time.Second), strings.Join(names, ", "))})
	}
	return exited
}

// stoppedWhen says at which point a cancelled teardown stopped.
func (r *run) stoppedWhen() string {
	switch {
	case len(r.killed) > 0:
		return "while SIGKILL was being sent"
	case len(r.termed) > 0:
		return "during the grace, before SIGKILL"
	}
	return "before any signal"
}

// step reports a single-shot step from its error. A cgroup that vanished
// under the engine was removed by the runtime cleaning up (dockerd removes
// a container's cgroup as soon as its last task dies): that is the end the
// teardown wants, never a failure.
func (r *run) step(step Step, okDetail string, err error) bool {
	if r.alreadyGone(step, err) {
		return false
	}
	if err != nil {
		r.fail(step, 0, "", "", err)
		return false
	}
	r.event(Event{Step: step, Status: OK, Detail: okDetail})
	return true
}
