package teardown

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/words"
	"github.com/sandtop/sandtop/proc"
)

// verifyPause paces verify rounds when nothing pinned is left to wait on
// (the survivors could not be pinned), so a stuck round does not spin.
const verifyPause = 50 * time.Millisecond

// cleanupWait bounds removing a cgroup directory that stays busy for a
// moment after its last task died.
const cleanupWait = 2 * time.Second

func (r *run) scan() (*proc.Snapshot, error) {
	if r.sc == nil && r.e.scanner != nil {
		r.sc = r.e.scanner
	}
	if r.sc == nil {
		// Verify re-groups with the plan's rules only, so it reads what
		// they need (a lazy scan), like the scan that made the plan.
		sc, err := proc.NewScanner(proc.Options{ProcRoot: r.e.procRoot, SysRoot: r.e.sysRoot, Need: r.e.rules.Needs})
		if err != nil {
			return nil, err
		}
		// The plan's snapshot holds the static fields of nearly every
		// process on the host: seeded with them, the first verify scan
		// reads only stat instead of five more files per process (on a
		// busy host a cold scan was most of a teardown).
		if r.p.View != nil && r.p.View.Snapshot != nil {
			sc.Seed(r.p.View.Snapshot)
		}
		r.sc = sc
	}
	r.e.scans.Add(1)
	snap, err := r.sc.Scan()
	if err == nil {
		r.lastSnap = snap
	}
	return snap, err
}

// verify checks with a fresh scan, not the plan's list, that nothing of the
// target is left, and kills newcomers until none remain or the deadline
// passes. It returns the survivors.
func (r *run) verify(ctx context.Context) []Survivor {
	vctx, cancel := context.WithTimeout(ctx, r.p.Deadline)
	defer cancel()
	// Survivors are reported after the time verify took: it gives up
	// before the deadline on what no retry can kill (EPERM).
	start := r.e.now()
	for round := 1; ; round++ {
		snap, err := r.scan()
		if err != nil {
			r.fail(StepVerify, 0, "", "", fmt.Errorf("rescan: %w", err))
			return r.survivors(nil, r.live())
		}
		left, zombies, fresh := r.remaining(snap)
		// Suspects in a cgroup that names the sandbox are taken like
		// members; the others are named, never signalled: the operator
		// included only those the plan listed, which are pinned already.
		var named []Survivor
		for _, s := range r.p.scope.find(snap, fresh, r.held, r.e.protected, r.lost) {
			if s.Provable {
				if r.pinSeen(s.Identity, 0) {
					left = append(left, snap.Proc(s.PID))
				}
				continue
			}
			named = append(named, Survivor{PID: s.PID, Comm: s.Comm, Cause: "suspect", Reason: "suspected escape (" + s.Why() + "): " + includeHint})
		}
		if len(left) == 0 && len(named) > 0 {
			r.event(Event{Step: StepVerify, Status: Fail, Detail: fmt.Sprintf("fresh scan: nothing of the tree of %s remains, but %s may have started inside it: %s", r.p.Target, words.Count(len(named), "process", "processes"), describeSurvivors(named))})
			return named
		}
		if len(left) == 0 {
			detail := fmt.Sprintf("fresh scan: nothing of %s remains", r.p.Target)
			if r.p.CgroupDir != "" {
				if pids, _ := ReadProcs(r.p.CgroupDir); len(pids) > 0 {
					detail += fmt.Sprintf("; %s still holds %s that are not the target's (%v), left alone", r.p.Cgroup, words.Count(len(pids), "process", "processes"), pids)
				} else {
					detail += "; " + r.p.Cgroup + " is empty"
				}
			}
			for _, z := range zombies {
				detail += "; " + z.Reason
			}
			r.unreaped = zombies
			r.event(Event{Step: StepVerify, Status: OK, Detail: detail})
			return nil
		}
		if vctx.Err() != nil || r.hopeless(left) {
			sv := append(r.survivors(snap, nil), named...)
			r.event(Event{Step: StepVerify, Status: Fail, Detail: fmt.Sprintf("%s of %s survive after %s: %s", words.Count(len(sv), "process", "processes"), r.p.Target, r.e.now().Sub(start).Round(time.Millisecond), describeSurvivors(sv))})
			return sv
		}
		newcomers := 0
		for _, p := range left {
			if !r.known(p.PID) {
				newcomers++
			}
			r.pinSeen(p.ID(), 0)
		}
		r.passes++
		r.event(Event{Step: StepVerify, Status: Skip, Detail: fmt.Sprintf("round %d: %s still in %s (%d new): killing them (kill pass %d)", round, words.Count(len(left), "process", "processes"), r.p.Target, newcomers, r.passes)})
		if r.p.CgroupDir != "" && r.cgroupNotOurs(snap) == "" {
			if err := Kill(r.p.CgroupDir); err == nil {
				r.cgroupKilled = true
				r.event(Event{Step: StepCgroupKill, Status: OK, Signal: "SIGKILL", Detail: "killed every process in " + r.p.Cgroup + " again"})
			}
		}
		r.stopAndKill(vctx)
		if len(r.live()) == 0 {
			select {
			case <-vctx.Done():
			case <-time.After(verifyPause):
			}
		}
	}
}

// hopeless reports whether every process left has already refused a
// signal for good (EPERM: not ours to signal): another round would only
// repeat the failure until the deadline.
func (r *run) hopeless(left []*proc.Process) bool {
	for _, p := range left {
		if _, failed := r.reasons[p.ID()]; !failed {
			return false
		}
	}
	return true
}

// held reports whether a live pin of the teardown holds id.
func (r *run) held(id proc.Identity) bool { return r.pins[id] != nil && !r.dead[id] }

// remaining lists the live processes of the target in snap, and notes on
// zombies whose reaper is outside the target; fresh is the view of snap
// that judged a sandbox's members (nil for a subtree).
func (r *run) remaining(snap *proc.Snapshot) (left []*proc.Process, zombies []Survivor, fresh *model.View) {
	in := map[int]*proc.Process{}
	alive := func(id proc.Identity) *proc.Process {
		if p := snap.Proc(id.PID); p != nil && p.Start == id.Start {
			return p
		}
		return nil
	}
	if r.p.Sandbox != nil {
		// Built on the plan's view, so members keep their attribution
		// while their identity lives, wherever they have wandered.
		fresh = model.Build(snap, r.e.rules, r.p.View)
		if sb := fresh.Sandbox(r.p.Key); sb != nil {
			for _, m := range sb.Members {
				in[m.PID] = m.Process
			}
		}
	} else {
		for _, m := range r.p.Members {
			if p := alive(m.Identity); p != nil {
				in[p.PID] = p
			}
		}
		// Descendants of the subtree born since the plan.
		children := map[int][]*proc.Process{}
		for _, p := range snap.Procs {
			children[p.PPID] = append(children[p.PPID], p)
		}
		queue := make([]*proc.Process, 0, len(in))
		for _, p := range in {
			queue = append(queue, p)
		}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for _, c := range children[p.PID] {
				if in[c.PID] == nil {
					in[c.PID] = c
					queue = append(queue, c)
				}
			}
		}
	}
	for id := range r.pins {
		if p := alive(id); p != nil {
			in[p.PID] = p
		}
	}
	// Being in the target's cgroup proves nothing by itself: a process
	// moved there since the plan is not the target's, and the fresh view
	// above already holds every process of the cgroup that is.
	for _, p := range snap.Procs { // snap order keeps the report stable
		q := in[p.PID]
		if q == nil {
			continue
		}
		if !q.Zombie() {
			left = append(left, q)
			continue
		}
		if parent := snap.Proc(q.PPID); parent != nil && in[parent.PID] == nil {
			zombies = append(zombies, Survivor{PID: q.PID, Comm: q.Comm, Cause: "unreaped", State: "Z",
				Reason: fmt.Sprintf("zombie %d (%s) must be reaped by its parent %d (%s)", q.PID, q.Comm, parent.PID, parent.Comm)})
		}
	}
	return left, zombies, fresh
}

// survivors explains each process still alive: from snap when there is
// one, else from the pins.
func (r *run) survivors(snap *proc.Snapshot, pins []*Pinned) []Survivor {
	var out []Survivor
	if snap != nil {
		left, _, _ := r.remaining(snap)
		for _, p := range left {
			out = append(out, r.survivor(p))
		}
		return out
	}
	for _, p := range pins {
		out = append(out, Survivor{PID: p.ID.PID, Comm: p.Comm, Cause: "not-verified", Reason: "not verified: " + r.reasons[p.ID]})
	}
	return out
}

// survivor explains why a process of the target is alive, in words and
// as a cause a program can test.
func (r *run) survivor(p *proc.Process) Survivor {
	s := Survivor{PID: p.PID, Comm: p.Comm}
	if p.State != 0 {
		s.State = string(p.State)
	}
	s.Cause, s.Reason = r.reason(p)
	if s.Cause == "uninterruptible" {
		if s.Wchan = r.wchan(p.PID); s.Wchan != "" {
			s.Reason = "in uninterruptible sleep (D) in the kernel's " + s.Wchan + ": SIGKILL is pending and takes effect only when that wait ends (a FUSE server or NFS mount that never answers, a vfork parent whose child never execs or exits)"
		}
	}
	return s
}

// wchan is the kernel function a process sleeps in (/proc/PID/wchan),
// "" when unknown.
func (r *run) wchan(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/wchan", r.e.procRoot, pid))
	if err != nil || len(b) == 0 || string(b) == "0" {
		return ""
	}
	return string(b)
}

func (r *run) reason(p *proc.Process) (cause, why string) {
	if why, ok := r.reasons[p.ID()]; ok {
		if strings.HasPrefix(why, "could not be pinned") {
			return "not-pinned", why
		}
		return "signal-failed", why
	}
	if r.stopped != "" && !r.killed[p.ID()] && !(r.cgroupKilled && r.p.inCgroup(Member{Cgroup: p.Cgroup})) {
		if r.termed[p.ID()] {
			return "stopped-by-operator", "the operator stopped the teardown " + r.stopped + ": SIGTERM was sent, SIGKILL never"
		}
		return "stopped-by-operator", "the operator stopped the teardown " + r.stopped + ": SIGKILL never sent"
	}
	if err := r.refused(p); err != nil {
		_, human := Describe(err)
		return "refused", human
	}
	if !r.known(p.PID) {
		return "not-pinned", "could not be pinned (exited or changed while we looked): no pidfd, so never signalled"
	}
	if p.Freezer != "" && r.lastSnap != nil && r.lastSnap.Freezers[p.Freezer].Frozen {
		return "frozen", "frozen by the v1 freezer " + p.Freezer + ", which could not be thawed: it dies from SIGKILL only once thawed"
	}
	if p.State != 'D' && r.frozenNow(p.PID) {
		return "frozen", "in frozen cgroup " + p.Cgroup + ", which could not be thawed: SIGKILL stays pending until it is"
	}
	switch p.State {
	case 'D':
		return "uninterruptible", "in uninterruptible sleep (D): SIGKILL takes effect only when its wait in the kernel ends"
	case 'T', 't':
		return "alive", "stopped and still alive after SIGKILL"
	}
	return "alive", "still alive after SIGKILL"
}

func describeSurvivors(sv []Survivor) string {
	parts := make([]string, 0, len(sv))
	for _, s := range sv {
		parts = append(parts, fmt.Sprintf("%d %s (%s)", s.PID, s.Comm, s.Reason))
	}
	return strings.Join(parts, "; ")
}

// cleanup removes what an unsupervised sandbox leaves behind: the rule's
// cleanup paths and the now-empty dedicated cgroup directories. A live
// supervisor cleans up after itself (it noticed the crash), and nothing is
// removed while processes of the target survive.
func (r *run) cleanup(ctx context.Context, clean bool) {
	switch {
	case r.p.Sandbox == nil:
		r.event(Event{Step: StepCleanup, Status: Skip, Detail: "a process subtree has nothing to clean up"})
		return
	case r.p.Supervised:
		r.event(Event{Step: StepCleanup, Status: Skip, Detail: "left to the supervisor (" + r.p.SupervisorNote + "), which cleans up after itself: its cgroups and state are not touched"})
		return
	case !clean:
		r.event(Event{Step: StepCleanup, Status: Skip, Detail: "processes survive: nothing removed"})
		return
	case len(r.p.Cleanup) == 0 && r.p.CgroupDir == "" && r.p.FreezerDir == "":
		detail := "nothing to remove"
		if len(r.p.CleanupRefused) > 0 {
			detail += "; " + r.p.cleanupRefusedText()
		}
		r.event(Event{Step: StepCleanup, Status: Skip, Detail: detail})
		return
	}
	if len(r.p.CleanupRefused) > 0 {
		r.event(Event{Step: StepCleanup, Status: Skip, Detail: r.p.cleanupRefusedText()})
	}
	for _, path := range r.p.Cleanup {
		r.removePath(path)
	}
	r.removeCgroups(ctx)
}

// removeCgroups removes the dedicated cgroup directories, one line per
// path whatever the hierarchies it is in (v2 and the v1 freezer usually
// share it). A cgroup systemd manages (a *.scope, *.service or *.slice on
// its path) is left to systemd, which collects it once it empties.
func (r *run) removeCgroups(ctx context.Context) {
	type dir struct{ path, hier, dir string }
	var dirs []dir
	if r.p.CgroupDir != "" {
		dirs = append(dirs, dir{r.p.Cgroup, "v2", r.p.CgroupDir})
	}
	if r.p.FreezerDir != "" {
		dirs = append(dirs, dir{r.p.Freezer, "v1 freezer", r.p.FreezerDir})
	}
	for len(dirs) > 0 {
		path := dirs[0].path
		var hiers []string
		var errs []string
		for _, d := range dirs {
			if d.path != path {
				continue
			}
			hiers = append(hiers, d.hier)
			if SystemdManaged(path) {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, cleanupWait)
			err := RemoveTree(cctx, d.dir)
			cancel()
			if err != nil && !errors.Is(err, ErrCgroupGone) {
				errno, human := Describe(err)
				errs = append(errs, d.hier+": "+errno+" ("+human+"): "+err.Error())
			}
		}
		dirs = slices.DeleteFunc(dirs, func(d dir) bool { return d.path == path })
		where := strings.Join(hiers, " and ")
		switch {
		case SystemdManaged(path):
			r.event(Event{Step: StepCleanup, Status: Skip, Detail: "cgroup " + path + " (" + where + ") left to systemd, which removes its units' cgroups once empty"})
		case len(errs) > 0:
			r.event(Event{Step: StepCleanup, Status: Fail, Detail: "cgroup " + path + ": " + strings.Join(errs, "; ")})
		default:
			r.event(Event{Step: StepCleanup, Status: OK, Detail: "removed cgroup " + path + " (" + where + ")"})
		}
	}
}

// SystemdManaged reports whether a cgroup path lies in a unit systemd
// manages: a component named *.scope, *.service or *.slice
// (systemd.unit(5)); systemd removes those cgroups itself, and a unit's
// cgroup removed behind its back confuses it.
func SystemdManaged(path string) bool {
	for part := range strings.SplitSeq(path, "/") {
		if strings.HasSuffix(part, ".scope") || strings.HasSuffix(part, ".service") || strings.HasSuffix(part, ".slice") {
			return true
		}
	}
	return false
}

// removePath removes one cleanup path and reports whether it is gone.
func (r *run) removePath(path string) bool {
	if !model.SafeCleanupPath(path, r.p.Sandbox.ID) {
		r.event(Event{Step: StepCleanup, Status: Fail, Detail: "refused to remove " + path + ": a cleanup path must be absolute, clean, and name the sandbox ID"})
		return false
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		r.event(Event{Step: StepCleanup, Status: OK, Detail: path + " already gone"})
		return true
	}
	// A recursive removal goes on into a file system mounted below the
	// path (a workspace's bind mount of the host's files): with a mount
	// there, nothing is removed.
	if mounts, err := proc.MountsUnder("", path); err != nil || len(mounts) > 0 {
		why := "cannot tell whether a file system is mounted below it: " + fmt.Sprint(err)
		if err == nil {
			why = "a file system is mounted at " + mounts[0] + ": unmount it first"
		}
		r.event(Event{Step: StepCleanup, Status: Fail, Detail: "refused to remove " + path + ": " + why})
		return false
	}
	if err := os.RemoveAll(path); err != nil {
		errno, human := Describe(err)
		if errno == "EPERM" && os.Geteuid() == 0 {
			// Refused to root itself: most often chattr +i or +a on a
			// file below it (lsattr shows which).
			human = "not permitted even to root (an immutable or append-only file? lsattr -R " + path + ")"
		}
		r.event(Event{Step: StepCleanup, Status: Fail, Error: errno, Detail: path + ": " + human})
		return false
	}
	r.event(Event{Step: StepCleanup, Status: OK, Detail: "removed " + path})
	return true
}
