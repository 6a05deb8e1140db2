package ui

import (
	"context"
	"maps"
	"os/user"
	"strconv"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/teardown"
)

// Every function here returns a tea.Cmd closure that captures values, never
// the model, and reports back with a message: the I/O happens in the
// closure, on bubbletea's goroutine for it, never in Update.

func tickCmd(d time.Duration, gen int) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{gen: gen} })
}

// scanCmd scans once and names the uids it has not named before. known is
// never written: the names come back in a new map.
func scanCmd(src Source, known map[int]string, lookup func(uid int) string) tea.Cmd {
	return func() tea.Msg {
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
// and audit).
func (r *runs) shutdown(stop bool) {
	r.mu.Lock()
	r.closed = true
	close(r.gone)
	if stop {
		r.cancel()
	}
	for r.active > 0 {
		r.idle.Wait()
	}
	r.mu.Unlock()
}

// batch is the teardowns one confirmation started.
type batch struct {
	id    int
	plans []*teardown.Plan
	ch    chan tea.Msg
}

// runBatchCmd runs the plans one after the other in its own goroutine, as
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
		for _, p := range b.plans {
			o := k.Run(r.ctx, p, func(ev teardown.Event) { send(teardownEventMsg{batch: b.id, ev: ev}) })
			send(teardownPlanDoneMsg{batch: b.id, target: p.Target, totals: o.Totals, audit: o.Audit, auditErr: o.AuditErr})
		}
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
