package exporter

import (
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// badgeSince tracks, from scan to scan, when each sandbox got each of its
// badges, so that an alert can say "orphaned for 15 minutes" of the
// orphaning and not of the sandbox's start: a container that ran for two
// hours and lost its containerd a minute ago has been an orphan for a
// minute.
//
// No scan sees the moment itself, only a window: the badge came after the
// last scan that saw the sandbox without it and by the first scan that saw
// it with it. Both ends are exported. The late end (since) is what alerts
// use, so they never fire early; the early end says how much older it may
// be. A sandbox serve never saw without the badge (it had it at serve's
// first scan, after a restart, or it appeared with it) may have had it
// since it started: its early end is its root's start, unknown (0) for a
// sandbox with no process left.
//
// Nothing is stored between runs: serve is read-only, down to its own
// state. After a restart the late end starts again at the first scan, and
// the early end says the badge may be as old as the sandbox.
type badgeSince struct {
	// last is the time of the last good scan, zero before the first.
	last time.Time
	// seen holds the sandboxes of the last good scan.
	seen map[string]bool
	// got holds the badges the sandboxes of the last scan carried.
	got map[badgeKey]badgeWindow
}

type badgeKey struct {
	sandbox string
	badge   model.Badge
}

// badgeWindow is when one sandbox got one badge, in Unix seconds.
type badgeWindow struct {
	// root is the sandbox's root process when the badge was first seen,
	// so that a new sandbox under a reused ID starts a window of its own.
	root proc.Identity
	// since is the first scan that saw the badge.
	since float64
	// earliest is the last scan that saw the sandbox without the badge,
	// or its root's start when no scan did; 0 when neither is known.
	earliest float64
}

// update records a view's badges and returns the window of each badge
// each sandbox carries in it, by sandbox key and badge.
func (t *badgeSince) update(v *model.View) map[badgeKey]badgeWindow {
	now := unixSeconds(v.Time)
	got := make(map[badgeKey]badgeWindow)
	seen := make(map[string]bool, len(v.Sandboxes))
	for _, sb := range v.Sandboxes {
		key := sb.Key()
		seen[key] = true
		var root proc.Identity
		if sb.Root != nil {
			root = sb.Root.Process.ID()
		}
		for _, b := range sb.Badges {
			k := badgeKey{key, b}
			w, ok := t.got[k]
			if ok && (w.root == root || w.root == proc.Identity{} || root == proc.Identity{}) {
				// A sandbox whose last process died keeps its window:
				// it is the same sandbox, now a leftover.
				if w.root == (proc.Identity{}) {
					w.root = root
				}
				got[k] = w
				continue
			}
			w = badgeWindow{root: root, since: now}
			switch {
			case t.seen[key] && !ok:
				w.earliest = unixSeconds(t.last)
			case sb.Root != nil:
				w.earliest = unixSeconds(v.Snapshot.StartTime(sb.Root.Process))
			}
			got[k] = w
		}
	}
	t.last, t.seen, t.got = v.Time, seen, got
	return got
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
