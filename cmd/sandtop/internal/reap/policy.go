// Package reap is sandtop's janitor: it tears down, on a policy, the
// sandboxes that nobody else will (orphans, and leftovers of sandboxes with
// no process left). Its policy (Tracker) is pure: which sandboxes have
// matched the selection long enough, under the same identity, to be reaped,
// and in which order. The Reaper wires it to the scanner and the one
// teardown engine.
package reap

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/ui/format"
)

// Policy is what the operator asked for.
type Policy struct {
	// For is how long a sandbox must have matched the selection, every
	// scan and under the same identity, before it is reaped.
	For time.Duration
	// MinAge is how old a sandbox must be (its root's start; for a
	// leftover, its youngest leftover's last change).
	MinAge time.Duration
	// Max bounds the teardowns of one pass; 0 means no bound.
	Max int
	// MaxGap is the longest pause between two scans that still counts as
	// watching continuously; a longer one (a stopped reaper, a scan that
	// failed) starts every clock again. 0 means no bound.
	MaxGap time.Duration
}

// Seen is one selected sandbox as one scan saw it.
type Seen struct {
	// Key is the sandbox's identity across scans (runtime, namespace and
	// ID); ID is its ID, for people.
	Key     string
	ID      string
	Runtime string
	// Identity names what the sandbox is made of: its root's pid and
	// start time, or its leftovers' paths and times. A change restarts
	// the clock.
	Identity string
	Badges   []model.Badge
	Age      time.Duration
	// Evidence is what the view says about it (the supervisor note).
	Evidence string
	// Supervised is true when a live supervisor owns it: the reaper never
	// tears such a sandbox down, whatever its badges (an orphan badge can
	// come from one escaped member while the runtime is alive).
	Supervised bool
}

// SeenOf describes a sandbox of v for the tracker.
func SeenOf(v *model.View, sb *model.Sandbox) Seen {
	return Seen{Key: sb.Key(), ID: sb.ID, Runtime: sb.Runtime, Identity: IdentityOf(sb), Badges: slices.Clone(sb.Badges), Age: v.Age(sb), Evidence: sb.SupervisorNote, Supervised: sb.Supervised}
}

// IdentityOf names what a sandbox is made of, as the tracker compares it
// between scans: the root's identity (a supervisor that replaced the
// sandbox's VM gives a new one), or for a sandbox with no process left
// each leftover's kind, path and modification time (a runtime that touched
// one is alive).
func IdentityOf(sb *model.Sandbox) string {
	if sb.Root != nil {
		return "root " + sb.Root.ID().String()
	}
	parts := make([]string, 0, len(sb.Leftovers))
	for _, l := range sb.Leftovers {
		parts = append(parts, fmt.Sprintf("%s %s@%d", l.Kind, l.Path, l.ModTime.UnixNano()))
	}
	slices.Sort(parts)
	return "leftovers " + strings.Join(parts, ", ")
}

// Action is what a pass decides for one sandbox.
type Action string

// The actions.
const (
	// Reap: eligible, and within --max this pass.
	Reap Action = "reap"
	// Wait: selected, not eligible yet.
	Wait Action = "wait"
	// Defer: eligible, but over --max this pass; oldest go first.
	Defer Action = "defer"
	// Keep: selected, but its supervisor is alive: never reaped.
	Keep Action = "keep"
)

// Decision is the verdict on one selected sandbox in one pass.
type Decision struct {
	Seen
	Action Action
	// MatchedFor is how long it has matched continuously.
	MatchedFor time.Duration
	// Since is when the current run of matches began.
	Since time.Time
	// Reason says why, in words: "orphan for 2m of 10m".
	Reason string
	// Skip is the metrics label of what is not reaped: "supervised",
	// "for", "min-age", "max".
	Skip string
}

// Tracker remembers, per sandbox Key, since when it has matched under the
// same identity. It does no I/O; feed it one scan at a time.
type Tracker struct {
	p     Policy
	seen  map[string]*track
	last  time.Time
	scans int
}

type track struct {
	identity string
	since    time.Time
}

// NewTracker returns a tracker for the policy.
func NewTracker(p Policy) *Tracker { return &Tracker{p: p, seen: map[string]*track{}} }

// Observe records one scan at now, in which exactly the sandboxes in
// selected matched the selection, and decides about each of them. A
// sandbox missing from selected (it did not match, or it is gone) loses
// its clock, and so does one whose identity changed. Decisions come
// eligible first, oldest first (then by Key), and at most Max are Reap.
func (t *Tracker) Observe(now time.Time, selected []Seen) []Decision {
	gap := t.scans > 0 && t.p.MaxGap > 0 && now.Sub(t.last) > t.p.MaxGap
	t.last = now
	t.scans++
	next := make(map[string]*track, len(selected))
	out := make([]Decision, 0, len(selected))
	for _, s := range selected {
		tr := t.seen[s.Key]
		if tr == nil || tr.identity != s.Identity || gap {
			tr = &track{identity: s.Identity, since: now}
		}
		next[s.Key] = tr
		d := Decision{Seen: s, Since: tr.since, MatchedFor: now.Sub(tr.since)}
		switch {
		case s.Supervised:
			d.Action, d.Skip = Keep, "supervised"
		case d.MatchedFor < t.p.For:
			d.Action, d.Skip = Wait, "for"
		case s.Age < t.p.MinAge:
			d.Action, d.Skip = Wait, "min-age"
		default:
			d.Action = Reap
		}
		d.Reason = t.reason(d, gap)
		if d.Action == Keep {
			d.Reason += "; its supervisor is alive: the reaper leaves it to its runtime"
		}
		out = append(out, d)
	}
	t.seen = next
	slices.SortStableFunc(out, func(a, b Decision) int {
		return cmp.Or(
			cmp.Compare(rank(a.Action), rank(b.Action)),
			cmp.Compare(b.Age, a.Age),
			strings.Compare(a.Key, b.Key))
	})
	n := 0
	for i := range out {
		if out[i].Action != Reap {
			continue
		}
		if n++; t.p.Max > 0 && n > t.p.Max {
			out[i].Action, out[i].Skip = Defer, "max"
			out[i].Reason += fmt.Sprintf("; over --max %d this pass (oldest first)", t.p.Max)
		}
	}
	return out
}

func rank(a Action) int {
	if a == Reap {
		return 0
	}
	return 1
}

func (t *Tracker) reason(d Decision, gap bool) string {
	state := "selected"
	if len(d.Badges) > 0 {
		bs := make([]string, len(d.Badges))
		for i, b := range d.Badges {
			bs[i] = string(b)
		}
		state = strings.Join(bs, "+")
	}
	r := fmt.Sprintf("%s for %s of %s", state, short(d.MatchedFor), short(t.p.For))
	if gap {
		r += " (clock restarted: the last scan was more than " + short(t.p.MaxGap) + " ago)"
	}
	age := fmt.Sprintf("age %s", short(d.Age))
	if t.p.MinAge > 0 {
		age += " of " + short(t.p.MinAge)
	}
	return r + ", " + age
}

// short renders a duration to the second ("2m0s" as "2m").
func short(d time.Duration) string { return format.Duration(d.Round(time.Second)) }
