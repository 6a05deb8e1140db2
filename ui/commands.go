package ui

import (
	"context"
	"fmt"
	"maps"
	"os/user"
	"strconv"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/teardown"
	"github.com/sandtop/sandtop/ui/format"
)

// Every function here returns a tea.Cmd closure that captures values, never
// the model, and reports back with a message: the I/O happens in the
// closure, on bubbletea's goroutine for it, never in Update.

func tickCmd(d time.Duration, gen int) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{gen: gen} })
}

// scanCmd scans once, reading the cgroup figures needs asks for, and
// names the uids it has not named before. known is never written: the
// names come back in a new map.
func scanCmd(src Source, needs model.ResourceNeeds, known map[int]string, lookup func(uid int) string) tea.Cmd {
	return func() tea.Msg {
		if n, ok := src.(NeedsSource); ok {
			n.SetResourceNeeds(needs)
		}
		v, err := src.Scan()
		if err != nil {
			return viewMsg{err: err}
		}
		msg := viewMsg{view: v, users: nameUsers(v, known, lookup)}
		if r, ok := src.(Recorder); ok {
			st := r.Recording()
			msg.rec = &st
		}
		return msg
	}
}

// nameUsers names the uids of v that known does not. known is never
// written: new names come back in a new map.
func nameUsers(v *model.View, known map[int]string, lookup func(uid int) string) map[int]string {
	users, cloned := known, false
	for _, p := range v.Snapshot.Procs {
		if _, ok := users[p.UID]; ok || p.UID < 0 {
			continue
		}
		if !cloned {
			users, cloned = make(map[int]string, len(known)+1), true
			maps.Copy(users, known)
		}
		users[p.UID] = lookup(p.UID)
	}
	return users
}

// LookupUser names a uid from the user database, or spells it out.
func LookupUser(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}

// planCmd plans every target against one view. Planning is pure, but the
// Killer is an interface and may not be: it stays out of Update.
func planCmd(k Killer, v *model.View, targets []Target, grace time.Duration) tea.Cmd {
	return func() tea.Msg {
		msg := plansMsg{view: v}
		for _, t := range targets {
			p, err := k.Plan(v, t, grace)
			if err != nil {
				msg.errs = append(msg.errs, err.Error())
				continue
			}
			msg.plans = append(msg.plans, p)
		}
		return msg
	}
}

// runs tracks the teardowns in flight so that quitting can cancel them and
// wait until each has thawed what it froze and written its audit record.
type runs struct {
	ctx    context.Context
	cancel context.CancelFunc
	// gone is closed when the screen has gone: nobody reads a batch's
	// events any more, so sending them must not block the teardown.
	gone chan struct{}

	mu     sync.Mutex
	closed bool
	active int
	idle   *sync.Cond
	// unseen are the teardowns that did not end clean after the screen
	// stopped showing them, or that the operator stopped: what the screen
	// must still say once it is gone.
	unseen []string
}

// ended records how a teardown ended, for Shutdown to report what the
// screen could no longer show.
func (r *runs) ended(target string, t teardown.Totals) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.OK() || (!r.closed && t.Stopped == "") {
		return
	}
	// Printed on stderr once the screen is gone: the target and comms are
	// the processes' choice, a newline in them a forged line.
	line := fmt.Sprintf("%s: %s", format.Printable(target), format.Count(len(t.Survivors), "survivor", "survivors"))
	if t.Stopped != "" {
		line += ", stopped by the operator " + t.Stopped
	}
	for _, s := range t.Survivors {
		line += fmt.Sprintf("; %d %s (%s)", s.PID, format.Printable(s.Comm), format.Printable(s.Reason))
	}
	r.unseen = append(r.unseen, line)
}

func newRuns() *runs {
	ctx, cancel := context.WithCancel(context.Background())
	r := &runs{ctx: ctx, cancel: cancel, gone: make(chan struct{})}
	r.idle = sync.NewCond(&r.mu)
	return r
}

// enter registers a teardown goroutine; false once shut down, so a
// teardown whose command only starts after the program quit never runs.
func (r *runs) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.active++
	return true
}

func (r *runs) exit() {
	r.mu.Lock()
	r.active--
	r.idle.Broadcast()
	r.mu.Unlock()
}

// shutdown waits for every teardown to finish, cancelling them first when
// stop is set (they then send no further signal, but still thaw, verify
// and audit), and returns what ended badly unseen.
func (r *runs) shutdown(stop bool) []string {
	r.mu.Lock()
	r.closed = true
	close(r.gone)
	if stop {
		r.cancel()
	}
	for r.active > 0 {
		r.idle.Wait()
	}
	defer r.mu.Unlock()
	return r.unseen
}

// batch is the teardowns one confirmation started.
type batch struct {
	id    int
	plans []*teardown.Plan
	ch    chan tea.Msg
	// endGrace, closed, ends the grace wait of the batch's teardowns: SIGKILL
	// now (teardown.WithEndGrace).
	endGrace     chan struct{}
	endGraceOnce sync.Once
}

// cutGrace ends the batch's grace wait; it may be called any number of times.
func (b *batch) cutGrace() { b.endGraceOnce.Do(func() { close(b.endGrace) }) }

// maxParallelTeardowns bounds how many plans of a batch run at once.
const maxParallelTeardowns = 16

// runBatchCmd runs the plans together in its own goroutine, as
// bubbletea's examples/realtime does, streaming every event into b.ch; the
// Killer appends each plan's audit record before its Run returns.
func runBatchCmd(r *runs, k Killer, b *batch) tea.Cmd {
	return func() tea.Msg {
		defer close(b.ch)
		if !r.enter() {
			return nil
		}
		defer r.exit()
		send := func(m tea.Msg) {
			select {
			case b.ch <- m:
			case <-r.gone:
			}
		}
		// The plans run together, so a batch takes about one grace, not
		// one per target; each event line names its target.
		ctx := teardown.WithEndGrace(r.ctx, b.endGrace)
		var wg sync.WaitGroup
		slots := make(chan struct{}, maxParallelTeardowns)
		for _, p := range b.plans {
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer func() { <-slots; wg.Done() }()
				o := k.Run(ctx, p, func(ev teardown.Event) { send(teardownEventMsg{batch: b.id, ev: ev}) })
				r.ended(p.Target, o.Totals)
				send(teardownPlanDoneMsg{batch: b.id, target: p.Target, totals: o.Totals, audit: o.Audit, auditErr: o.AuditErr, comeback: comebackOf(p, o.Totals)})
			}()
		}
		wg.Wait()
		return nil
	}
}

// waitBatchCmd delivers the next message of a batch; Update re-arms it
// after each one until the channel closes.
func waitBatchCmd(b *batch) tea.Cmd {
	return func() tea.Msg {
		if m, ok := <-b.ch; ok {
			return m
		}
		return teardownBatchDoneMsg{batch: b.id}
	}
}
