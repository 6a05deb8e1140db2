package teardown

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/words"
	"github.com/sandtop/sandtop/proc"
)

// leftovers runs the plan of a sandbox with no process left: it signals
// nothing. A fresh scan first checks that no process has the ID and that
// no supervisor of the runtime came back since the plan (either would
// own the leftovers now); then each removable leftover is removed: paths
// as cleanup paths are, cgroups only when empty and never the unit of a
// running systemd.
func (r *run) leftovers(ctx context.Context) Totals {
	n := 0
	for _, l := range r.p.Leftovers {
		if l.Removable() {
			n++
		}
	}
	r.event(Event{Step: StepPlan, Status: OK, Detail: fmt.Sprintf("no process left; %d leftovers, %d to remove", len(r.p.Leftovers), n)})
	snap, err := r.scan()
	if err != nil {
		r.fail(StepVerify, 0, "", "", fmt.Errorf("rescan: %w", err))
		return r.finish("nothing removed")
	}
	if why := r.leftoversOwned(snap); why != "" && n > 0 {
		r.event(Event{Step: StepVerify, Status: Fail, Detail: why + ": nothing removed"})
		return r.finish("nothing removed")
	}
	r.event(Event{Step: StepVerify, Status: OK, Detail: "fresh scan: no process has the ID " + r.p.Target})
	removed := 0
	for _, l := range r.p.Leftovers {
		if ctx.Err() != nil {
			r.event(Event{Step: StepCleanup, Status: Skip, Detail: l.Path + ": cancelled, kept"})
			r.results = append(r.results, LeftoverResult{Kind: string(l.Kind), Path: l.Path, Netns: l.Netns, Status: Skip, Detail: "cancelled, kept"})
			continue
		}
		r.cleanupEv = Event{}
		if r.removeLeftover(ctx, l, snap) {
			removed++
		}
		r.results = append(r.results, LeftoverResult{Kind: string(l.Kind), Path: l.Path, Netns: l.Netns, Status: r.cleanupEv.Status, Detail: r.cleanupEv.Detail})
	}
	return r.finish(fmt.Sprintf("%d of %s removed", removed, words.Count(len(r.p.Leftovers), "leftover", "leftovers")))
}

// leftoversOwned says why the leftovers are no longer the dead sandbox's
// to remove, or "".
func (r *run) leftoversOwned(snap *proc.Snapshot) string {
	v := model.Build(snap, r.e.rules, nil)
	if sb := v.Live(r.p.Runtime, r.p.Sandbox.Namespace, r.p.Sandbox.ID); sb != nil {
		return fmt.Sprintf("the ID %s has a live process again (pid %d)", r.p.Target, sb.Root.PID)
	}
	if r.p.Supervised {
		return "" // planned as kept: nothing is to be removed anyway
	}
	if r.p.Sandbox != nil {
		if alive, note := model.NewLeftovers(r.e.rules).SupervisorAlive(r.p.Sandbox, v); alive {
			return note
		}
	}
	return ""
}

// removeLeftover removes one leftover, or says why it stays; it reports
// whether it is gone. snap is the fresh scan: whether a systemd manager
// owns a unit's cgroup is judged there, as the plan judged it.
func (r *run) removeLeftover(ctx context.Context, l model.Leftover, snap *proc.Snapshot) bool {
	switch {
	case !l.Removable():
		r.event(Event{Step: StepCleanup, Status: Skip, Detail: "kept " + string(l.Kind) + " " + l.Path + ": " + l.Keep})
		return false
	case l.Kind != proc.KindCgroup:
		if gone, handled := r.removeKind(l); handled {
			return gone
		}
		return r.removePath(l.Path)
	case model.SystemdOwns(snap, l.Path):
		r.event(Event{Step: StepCleanup, Status: Skip, Detail: "kept cgroup " + l.Path + ": a systemd unit's"})
		return false
	}
	if busy, err := cgroupBusy(l.Dir, l.V1); err != nil || busy {
		why := "not empty"
		if err != nil {
			why = "cannot tell whether it is empty: " + err.Error()
		}
		r.event(Event{Step: StepCleanup, Status: Skip, Detail: "kept cgroup " + l.Path + ": " + why})
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, cleanupWait)
	defer cancel()
	// rmdir(2) of a cgroup that is not empty fails with EBUSY, so a process
	// moved in after the check above keeps the cgroup alive.
	if err := RemoveTree(cctx, l.Dir); err != nil && !errors.Is(err, ErrCgroupGone) {
		errno, human := Describe(err)
		r.event(Event{Step: StepCleanup, Status: Fail, Error: errno, Detail: "cgroup " + l.Path + ": " + human + ": " + err.Error()})
		return false
	}
	what := l.Path
	if l.Hierarchy != "" {
		what += " (" + l.Hierarchy + ")"
	}
	r.event(Event{Step: StepCleanup, Status: OK, Detail: "removed empty cgroup " + what})
	return true
}

// cgroupBusy reports whether a process lives in the cgroup at dir or below.
func cgroupBusy(dir string, v1 bool) (bool, error) {
	if !v1 {
		st, err := proc.ReadCgroupState(dir, false)
		if err != nil {
			return false, err
		}
		return st.Populated, nil
	}
	dirs, err := cgroupDirs(dir)
	if err != nil {
		return false, err
	}
	for _, d := range dirs {
		pids, err := ReadProcs(d)
		if err != nil && !errors.Is(err, ErrCgroupGone) {
			return false, err
		}
		if len(pids) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// removedPaths lists the leftovers a finished plan was to remove.
func removedPaths(ls []model.Leftover) []string {
	var out []string
	for _, l := range ls {
		if l.Removable() && !slices.Contains(out, l.Path) {
			out = append(out, l.Path)
		}
	}
	return out
}
