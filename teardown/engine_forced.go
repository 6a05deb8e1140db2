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

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/words"
	"github.com/sandtop/sandtop/proc"
)

// killWait bounds how long the forced phase waits for SIGKILLed processes
// to exit before verify takes over (verify keeps checking until the
// plan's deadline).
const killWait = 2 * time.Second

// maxStopPasses bounds the SIGSTOP walk; every pass must find a new
// process to continue, so only a tree forking faster than we can stop it
// gets near this.
const maxStopPasses = 64

// quietStopPasses ends the SIGSTOP walk early once this many passes in a
// row found no new process.
const quietStopPasses = 3

// forced kills whatever the graceful phase left. With a dedicated v2 cgroup
// cgroup.kill does it atomically, catching processes forked meanwhile; with
// a dedicated v1 freezer the tree is frozen so it cannot fork, then killed,
// then thawed (v1-frozen tasks die only on thaw); with neither, the tree is
// SIGSTOPped top-down until no new process appears, then SIGKILLed.
func (r *run) forced(ctx context.Context) {
	r.passes++
	// A member gone before the stop pass (exited by itself, or of
	// SIGTERM) may have left children forked after the plan that no pass
	// will find in the tree: verify looks for them among the suspects.
	r.lost = len(r.gone)+len(r.dead) > 0
	// A task frozen by the v1 freezer dies from SIGKILL only once thawed.
	r.thawOwned("a task frozen by the v1 freezer dies from SIGKILL only once thawed")
	switch {
	case r.p.CgroupDir != "":
		if r.cgroupKill(ctx) {
			return
		}
	case r.p.FreezerDir != "":
		if r.freezerKill(ctx) {
			return
		}
	}
	r.stopAndKill(ctx)
}

// cgroupKill returns false when the caller must fall back to signalling
// each process.
func (r *run) cgroupKill(ctx context.Context) bool {
	if err := RefuseCgroup(r.p.CgroupDir, r.e.protected); err != nil {
		r.fail(StepCgroupKill, 0, "", "", err)
		return false
	}
	if _, err := os.Stat(r.p.CgroupDir); errors.Is(err, fs.ErrNotExist) {
		r.alreadyGone(StepCgroupKill, fmt.Errorf("%s: %w", r.p.CgroupDir, ErrCgroupGone))
		return false
	}
	// Judging the cgroup costs a scan of the whole host and a Build (at
	// 10,000 processes about a third of a kill's time). A cgroup that
	// holds no task, in itself or below ("populated 0" in cgroup.events,
	// cgroup-v2.rst), holds no stranger to judge: a scan now would find
	// nobody in it. A task moved in after this read is the race a scan
	// has too, between its read and the kill; pids.max=0 and the check
	// below are what narrow it.
	if busy, err := Populated(r.p.CgroupDir); err != nil || busy {
		if why := r.cgroupNotOurs(nil); why != "" {
			r.event(Event{Step: StepCgroupKill, Status: Skip, Detail: why + ": falling back to per-process SIGKILL"})
			return false
		}
	}
	detail := "killed every process in " + r.p.Cgroup
	// pids.max=0 first, as systemd does before its final pass, so that
	// nothing can fork between the kill and the check.
	if restore, err := SetPidsMax0(r.p.CgroupDir); err == nil {
		defer restore()
		detail += " (pids.max=0 first)"
	}
	// Written even to an empty cgroup (it costs nothing and closes the
	// race with a process moved in), but not reported as a kill.
	empty := false
	if busy, err := Populated(r.p.CgroupDir); err == nil && !busy {
		empty = true
	}
	if err := Kill(r.p.CgroupDir); err != nil {
		if errors.Is(err, ErrCgroupGone) {
			r.event(Event{Step: StepCgroupKill, Status: Skip, Detail: "cgroup already removed"})
		} else {
			errno, human := Describe(err)
			r.event(Event{Step: StepCgroupKill, Status: Skip, Error: errno, Detail: human + ": falling back to per-process SIGKILL"})
			return false
		}
	} else {
		r.cgroupKilled = true
		if empty {
			r.event(Event{Step: StepCgroupKill, Status: Skip, Detail: "nothing left in " + r.p.Cgroup + " to kill"})
		} else {
			r.event(Event{Step: StepCgroupKill, Status: OK, Signal: "SIGKILL", Detail: detail})
		}
	}
	if r.p.FreezerDir != "" {
		// cgroup.kill wakes v2-frozen tasks, but a task frozen by the v1
		// freezer dies only once that freezer is thawed.
		// A freezer the graceful phase thawed, or nobody froze, is left
		// alone: "thawed" is said only of one that was frozen.
		if thawed, err := ThawedV1(r.p.FreezerDir); err != nil || !thawed {
			r.thawV1 = true
			r.thawFreezer()
		}
	}
	wctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	if err := WaitCgroupEmpty(wctx, r.p.CgroupDir); err != nil && ctx.Err() == nil {
		// Not fatal here: verify names whatever is left.
		r.event(Event{Step: StepWait, Status: Skip, Detail: "cgroup not yet empty: " + err.Error()})
	}
	// A task leaves its cgroup a moment before its pidfd turns readable:
	// wait for the members that were inside. Members outside the cgroup (a
	// container's shim lives in containerd's) are not reached by
	// cgroup.kill; the caller signals them one by one.
	var inside []*Pinned
	for _, m := range r.p.Members {
		if pin := r.pins[m.Identity]; pin != nil && !r.dead[m.Identity] && r.p.inCgroup(m) {
			inside = append(inside, pin)
		}
	}
	exited, _ := WaitExit(wctx, inside)
	for _, p := range exited {
		r.dead[p.ID] = true
	}
	r.letMonitorsExit(ctx)
	return len(r.live()) == 0
}

// monitorExitWait bounds how long the members outside an emptied
// dedicated cgroup are given to exit by themselves before they are
// stopped and killed; monitorIdle is how long they may sit idle (no
// child, not running) before the wait ends early, as a containerd shim
// does, which waits to be told.
//
// monitorCleanupWait is how long a monitor that exits after its
// workload is given while it runs a child: conmon runs podman's cleanup
// command and waits for it, which on a slow or loaded host (a podman
// start under emulation) takes seconds; killed then, the cleanup dies
// with it half done.
const (
	monitorExitWait    = 5 * time.Second
	monitorIdle        = 200 * time.Millisecond
	monitorCleanupWait = 30 * time.Second
)

// letMonitorsExit gives the members left outside the dedicated cgroup, once
// it is empty, a moment to exit by themselves. They are typically the
// container's own monitor (podman's conmon), which on its container's
// death writes the exit status its runtime reads and then exits: SIGSTOPped
// and killed at once, it dies mid-write, and the runtime is left believing
// the container runs or is paused (podman then refuses rm --force of a
// "paused" container it cannot unpause). The wait lasts while one of them
// is a monitor its rule says exits after its workload (idle or not: it may
// sit blocked on its log or its runtime's files for a while on a slow
// host), or is busy (running, or with a child: conmon runs its runtime's
// cleanup command); whatever is idle or does not exit in time is stopped
// and killed as before.
func (r *run) letMonitorsExit(ctx context.Context) {
	if len(r.live()) == 0 {
		return
	}
	// systemd removes a scope's cgroup as soon as it is empty: gone is
	// empty too.
	if busy, err := Populated(r.p.CgroupDir); busy || err != nil && !errors.Is(err, ErrCgroupGone) {
		return
	}
	exits := map[proc.Identity]bool{}
	for _, m := range r.p.Members {
		if m.ExitsAfterWorkload {
			exits[m.Identity] = true
		}
	}
	var names []string
	start := time.Now()
	told := false
	for ctx.Err() == nil {
		left := r.live()
		if len(left) == 0 {
			break
		}
		// Once a monitor was seen running its cleanup, the longer wait
		// stands: the cleanup ends a moment before the monitor does.
		if !told {
			if cleaning := r.cleaning(left, exits); cleaning != "" {
				told = true
				r.event(Event{Step: StepWait, Status: Skip, Detail: fmt.Sprintf("%s was empty; waiting up to %s for its runtime's monitor to finish the runtime's cleanup: %s",
					r.p.Cgroup, monitorCleanupWait, cleaning)})
			}
		}
		limit := monitorExitWait
		if told {
			limit = monitorCleanupWait
		}
		if took := time.Since(start); took >= limit || took >= monitorIdle && !r.waiting(left, exits) {
			break
		}
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		exited, _ := WaitExit(wctx, left)
		cancel()
		for _, p := range exited {
			r.dead[p.ID] = true
			names = append(names, fmt.Sprintf("%d %s", p.ID.PID, p.Comm))
		}
	}
	if len(names) > 0 {
		r.event(Event{Step: StepWait, Status: OK, Detail: fmt.Sprintf("exited by itself within %s once %s was empty (a runtime's monitor records the exit for its runtime): %s",
			time.Since(start).Round(time.Millisecond), r.p.Cgroup, strings.Join(names, ", "))})
	}
}

// cleaning names the monitors among ps that exit after their workload
// and are running a child now (their runtime's cleanup command), "" when
// none is.
func (r *run) cleaning(ps []*Pinned, exits map[proc.Identity]bool) string {
	var out []string
	for _, p := range ps {
		if !exits[p.ID] {
			continue
		}
		if kids, err := proc.Children(r.e.procRoot, p.ID.PID); err == nil && len(kids) > 0 {
			out = append(out, fmt.Sprintf("%d %s (running pid %s)", p.ID.PID, p.Comm, strings.Trim(fmt.Sprint(kids), "[]")))
		}
	}
	return strings.Join(out, "; ")
}

// waiting reports whether any of the processes is still worth waiting
// for: a monitor that exits after its workload, or one that is running or
// has a child.
func (r *run) waiting(ps []*Pinned, exits map[proc.Identity]bool) bool {
	for _, p := range ps {
		if exits[p.ID] {
			return true
		}
		if _, st, err := proc.ReadIdentity(r.e.procRoot, p.ID.PID); err == nil && st == 'R' {
			return true
		}
		if kids, err := proc.Children(r.e.procRoot, p.ID.PID); err == nil && len(kids) > 0 {
			return true
		}
	}
	return false
}

// cgroupNotOurs says why the plan's cgroup may no longer be killed whole,
// or "" when it still may. cgroup.kill kills whatever is in the cgroup when
// it runs, and the plan may be minutes old (the operator took time to
// confirm): so the cgroup is judged again on a fresh scan, by the model's
// own rule for a dedicated cgroup, right before every cgroup.kill. snap is
// a scan to judge by; nil scans now.
func (r *run) cgroupNotOurs(snap *proc.Snapshot) string {
	if snap == nil {
		var err error
		if snap, err = r.scan(); err != nil {
			return "cannot rescan to check the cgroup: " + err.Error()
		}
	}
	v := model.Build(snap, r.e.rules, r.p.View)
	sb := v.Sandbox(r.p.Key)
	for _, p := range snap.Procs {
		if p.Zombie() || (p.Cgroup != r.p.Cgroup && !strings.HasPrefix(p.Cgroup, r.p.Cgroup+"/")) {
			continue
		}
		if sb == nil || !sb.Holds(p.ID()) {
			return fmt.Sprintf("pid %d (%s) in %s is not the target's", p.PID, p.Comm, r.p.Cgroup)
		}
	}
	return ""
}

// freezerKill returns false when the caller must fall back.
func (r *run) freezerKill(ctx context.Context) bool {
	if err := RefuseCgroup(r.p.FreezerDir, r.e.protected); err != nil {
		r.fail(StepFreeze, 0, "", "", err)
		return false
	}
	fctx, cancel := context.WithTimeout(ctx, killWait)
	err := FreezeV1(fctx, r.p.FreezerDir)
	cancel()
	if r.alreadyGone(StepFreeze, err) {
		return false
	}
	// Even a failed freeze may have left the cgroup FREEZING: thaw it in
	// any case once done.
	r.thawV1 = true
	if err != nil {
		r.fail(StepFreeze, 0, "", "", err)
		return false
	}
	r.event(Event{Step: StepFreeze, Status: OK, Detail: "froze v1 freezer " + r.p.Freezer + " so nothing in it can fork"})
	if pids, err := ReadProcs(r.p.FreezerDir); err == nil {
		r.pinPIDs(pids, 0)
	}
	for _, p := range r.live() {
		r.signal(StepKill, p, unix.SIGKILL, false)
	}
	r.thawFreezer()
	wctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	r.waitDead(wctx)
	return true
}

func (r *run) thawFreezer() {
	if !r.thawV1 {
		return
	}
	r.thawV1 = false
	r.step(StepThaw, "thawed v1 freezer "+r.p.Freezer+" (its frozen tasks die from SIGKILL only on thaw)", ThawV1(r.p.FreezerDir))
}

// stopAndKill stops the tree from forking with SIGSTOP, top-down, pinning
// every child it finds, until a pass finds no new process and every live
// one is stopped; then it SIGKILLs every pinned process.
func (r *run) stopAndKill(ctx context.Context) {
	live := r.live()
	if len(live) == 0 {
		r.event(Event{Step: StepKill, Status: Skip, Detail: "nothing left to kill"})
		return
	}
	passes, found, quiet := 0, 0, 0
	defer func() { r.stopPasses += passes + 1 }()
	for ; passes < maxStopPasses && ctx.Err() == nil; passes++ {
		live = r.live()
		running, added := 0, 0
		// Top-down: parents first, so a parent is stopped before we
		// read its children and cannot add more behind our back.
		for _, p := range slices.Backward(live) {
			r.signal(StepStop, p, unix.SIGSTOP, true)
		}
		settle := time.Now().Add(stopSettle)
		for _, p := range live {
			if st := r.settledState(p, settle); st != 0 && !halted(st) {
				running++
			}
			kids, err := proc.Children(r.e.procRoot, p.ID.PID)
			if err != nil {
				if errors.Is(err, proc.ErrChildrenUnsupported) {
					kids = r.childrenByScan(p.ID.PID)
				} else {
					continue
				}
			}
			added += r.pinPIDs(kids, p.ID.PID)
		}
		found += added
		if added == 0 && running == 0 {
			break
		}
		// A task still not stopped after a few passes that found nothing
		// new is in uninterruptible sleep or frozen: it cannot fork either.
		if quiet++; added > 0 {
			quiet = 0
		}
		if quiet >= quietStopPasses {
			break
		}
	}
	live = r.live()
	// Judged by the state each settles in, not the first read after
	// SIGSTOP: delivery takes a moment, and a process read as S then is
	// not "uninterruptible".
	settle := time.Now().Add(stopSettle)
	stopped, denied := 0, 0
	var stuck, frozen, running []string
	for _, p := range live {
		st := r.settledState(p, settle)
		switch {
		case st == 'T' || st == 't':
			stopped++
		case r.denied[p.ID]:
			denied++
		// A task frozen by a cgroup (the v1 freezer) shows D too: frozen,
		// not waiting on I/O.
		case st != 0 && r.frozenNow(p.ID.PID):
			frozen = append(frozen, fmt.Sprintf("%d %s", p.ID.PID, p.Comm))
		case st == 'D':
			what := fmt.Sprintf("%d %s", p.ID.PID, p.Comm)
			if w := r.wchan(p.ID.PID); w != "" {
				what += " (in " + w + ")"
			}
			stuck = append(stuck, what)
		case st != 0 && !halted(st):
			running = append(running, fmt.Sprintf("%d %s (state %c)", p.ID.PID, p.Comm, st))
		}
	}
	detail := fmt.Sprintf("%d of %s held by SIGSTOP after %s; %d born late and pinned", stopped, words.Count(len(live), "process", "processes"), words.Count(passes+1, "pass", "passes"), found)
	if denied > 0 {
		detail += fmt.Sprintf("; %s refused with EPERM (not ours to signal)", words.Count(denied, "process", "processes"))
	}
	if len(stuck) > 0 {
		detail += "; in uninterruptible sleep (D), cannot stop until its wait in the kernel ends: " + strings.Join(stuck, ", ")
	}
	if len(frozen) > 0 {
		detail += "; in a frozen cgroup, cannot act on SIGSTOP: " + strings.Join(frozen, ", ")
	}
	if len(running) > 0 {
		detail += "; not stopped within " + stopSettle.String() + ": " + strings.Join(running, ", ")
	}
	r.event(Event{Step: StepStop, Status: OK, Signal: "SIGSTOP", Detail: detail})
	for _, p := range r.live() {
		r.signal(StepKill, p, unix.SIGKILL, false)
	}
	wctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	r.waitDead(wctx)
}

// stopSettle bounds how long the stop pass waits for SIGSTOP to take
// effect before it judges a process's state.
const stopSettle = 100 * time.Millisecond

// halted reports whether a state is one a stopped or dead process shows.
func halted(st byte) bool { return st == 'T' || st == 't' || st == 'Z' || st == 'X' }

// settledState reads a pinned process's state until it shows stopped or
// dead, or until deadline; 0 when it can no longer be read (gone).
func (r *run) settledState(p *Pinned, deadline time.Time) byte {
	for pause := 200 * time.Microsecond; ; pause = min(2*pause, 10*time.Millisecond) {
		id, st, err := proc.ReadIdentity(r.e.procRoot, p.ID.PID)
		if err != nil || id != p.ID {
			return 0
		}
		if halted(st) || !time.Now().Before(deadline) {
			return st
		}
		time.Sleep(pause)
	}
}

// frozenNow reports whether a process sits in a frozen cgroup (v2 or the
// v1 freezer), read now.
func (r *run) frozenNow(pid int) bool {
	if r.lastSnap == nil && (r.p.View == nil || r.p.View.Snapshot == nil) {
		return false
	}
	snap := r.lastSnap
	if snap == nil {
		snap = r.p.View.Snapshot
	}
	p := snap.Proc(pid)
	if p == nil {
		return false
	}
	if p.Cgroup != "" {
		if ev, err := readCgroupFile(snap.Mounts.V2Dir(p.Cgroup), "cgroup.events", fsV2, ErrNotCgroup); err == nil {
			if v, ok := eventValue(ev, "frozen"); ok && v == "1" {
				return true
			}
		}
	}
	if p.Freezer != "" {
		if thawed, err := ThawedV1(snap.Mounts.FreezerDir(p.Freezer)); err == nil && !thawed {
			return true
		}
	}
	return false
}

// pinPIDs pins processes found late (in a cgroup or a children list). With
// parent > 0, a process is pinned only if it is still that parent's child
// once pinned, so a pid recycled between the listing and the pin is never
// mistaken for ours. It returns how many new processes were pinned.
func (r *run) pinPIDs(pids []int, parent int) int {
	n := 0
	for _, pid := range pids {
		if r.known(pid) {
			continue
		}
		id, _, err := proc.ReadIdentity(r.e.procRoot, pid)
		if err == nil && r.pinSeen(id, parent) {
			n++
		}
	}
	return n
}

// pinSeen pins the process a scan saw, if it is still that process (the
// same start time) and, with parent > 0, still that parent's child. A
// scan is old by the time it is judged: its pid may have gone to another
// process since, which must never be pinned in its place. It reports
// whether a new process was pinned.
func (r *run) pinSeen(id proc.Identity, parent int) bool {
	if r.known(id.PID) {
		return false
	}
	// Pin checks the start time after opening the pidfd, and records the
	// ppid and flags of the process the pidfd holds: no further read is
	// needed to judge it.
	pin, err := Pin(r.e.procRoot, id)
	if err != nil {
		return false
	}
	if (parent > 0 && pin.PPID != parent) || r.refused(&proc.Process{PID: id.PID, PPID: pin.PPID, Flags: pin.Flags, Comm: pin.Comm}) != nil {
		pin.Close()
		return false
	}
	r.add(pin)
	return true
}

// refused applies the same guard as the plan to a process found late.
func (r *run) refused(p *proc.Process) error {
	if err := Refuse(nil, p, -1); err != nil {
		return err
	}
	if r.e.protected[p.PID] {
		return &RefusedError{PID: p.PID, Reason: ReasonAncestor}
	}
	return nil
}

func (r *run) known(pid int) bool {
	id, ok := r.byPID[pid]
	return ok && !r.dead[id]
}

// childrenByScan lists a process's children from a full scan, for kernels
// built without CONFIG_PROC_CHILDREN.
func (r *run) childrenByScan(pid int) []int {
	snap, err := r.scan()
	if err != nil {
		return nil
	}
	var kids []int
	for _, p := range snap.Procs {
		if p.PPID == pid {
			kids = append(kids, p.PID)
		}
	}
	return kids
}

// waitDead waits for the live pinned processes to exit and records those
// that did.
func (r *run) waitDead(ctx context.Context) {
	exited, _ := WaitExit(ctx, r.live())
	for _, p := range exited {
		r.dead[p.ID] = true
	}
}

// thawOwned thaws every frozen cgroup the plan's processes are in, other
// than the dedicated ones the plan thaws itself, when every process in it
// is the target's: a paused podman container's libpod-<id> cgroup under
// kill --pid <conmon>, whose name says nothing the plan could call
// dedicated. What is in the cgroup decides, read right before the thaw. A
// cgroup that holds a bystander stays frozen, and the reason says so. It
// runs once per teardown.
func (r *run) thawOwned(why string) {
	if r.thawedOwned || r.p.View == nil || r.p.View.Snapshot == nil {
		return
	}
	r.thawedOwned = true
	snap := r.p.View.Snapshot
	type frozen struct {
		path, dir string
		v1        bool
	}
	var todo []frozen
	seen := map[string]bool{}
	for _, m := range r.p.Members {
		p := snap.Proc(m.PID)
		if p == nil || p.Start != m.Start {
			continue
		}
		if c := p.Cgroup; c != "" && c != "/" && c != r.p.Cgroup && snap.Cgroups[c].Frozen && !seen["v2:"+c] {
			seen["v2:"+c] = true
			todo = append(todo, frozen{c, snap.Mounts.V2Dir(c), false})
		}
		if c := p.Freezer; c != "" && c != "/" && c != r.p.Freezer && snap.Freezers[c].Frozen && !seen["v1:"+c] {
			seen["v1:"+c] = true
			todo = append(todo, frozen{c, snap.Mounts.FreezerDir(c), true})
		}
	}
	for _, f := range todo {
		name := f.path
		if f.v1 {
			name = "v1 freezer " + f.path
		}
		pids, err := ReadProcs(f.dir)
		if r.alreadyGone(StepThaw, err) {
			continue
		}
		if err != nil {
			r.fail(StepThaw, 0, "", "", err)
			continue
		}
		if stranger := r.stranger(pids); stranger != "" {
			r.event(Event{Step: StepThaw, Status: Skip, Detail: name + " is frozen and holds " + stranger + ", not the target's: not thawed"})
			continue
		}
		thaw := Thaw
		if f.v1 {
			thaw = ThawV1
		}
		r.step(StepThaw, "thawed "+name+": every process in it is the target's ("+why+")", thaw(f.dir))
	}
}

// stranger names the first pid in pids that is not a live pinned process
// of the target, or returns "".
func (r *run) stranger(pids []int) string {
	for _, pid := range pids {
		id, ok := r.byPID[pid]
		if !ok {
			return fmt.Sprintf("pid %d", pid)
		}
		if pin := r.pins[id]; pin == nil {
			return fmt.Sprintf("pid %d", pid)
		} else if cur, _, err := proc.ReadIdentity(r.e.procRoot, pid); err == nil && cur != id {
			return fmt.Sprintf("pid %d (reused)", pid)
		}
	}
	return ""
}
