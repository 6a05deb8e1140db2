package model

import (
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/sandtop/sandtop/proc"
)

// DefaultStuckAfter is how long a process must stay in uninterruptible
// sleep before its sandbox is badged stuck: long enough that disk and
// network waits on a loaded host do not count, short enough to find a
// hung FUSE or NFS read before an operator does.
const DefaultStuckAfter = 30 * time.Second

// HollowAfter is how long the runtime's side of a sandbox must have lived
// with no workload before it is badged hollow: a shim or conmon starts
// before its container and outlives it by the moments its runtime takes
// to notice.
const HollowAfter = 10 * time.Second

// Watch follows a host across refreshes for the trouble a single look
// cannot show: an OOM kill counter that grew, a process that stays in D,
// a runtime left with nothing to run. It works out every sandbox's
// resources (see Resources) and adds the badges oom, stuck and hollow,
// each with its evidence in Sandbox.Trouble. It is pure: the I/O is a
// proc.ResourceReader's, whose figures arrive in the view's snapshot.
// One Watch per refresh loop; a one-shot command uses a fresh one, which
// knows no baseline and no durations (only the kernel log's kills).
type Watch struct {
	// StuckAfter is the stuck threshold (DefaultStuckAfter when 0).
	StuckAfter time.Duration

	// oomBase is each cgroup's OOM kill count when first seen, and when.
	oomBase map[proc.CgroupKey]oomBase
	// dSince is when each process was first seen in state D.
	dSince map[proc.Identity]time.Time
	// roles caches what a rule-recognised member is, by identity.
	roles map[proc.Identity]role
	// last is the previous view, to name a victim the kernel log gives
	// by pid after it died.
	last *View
	// victims is, for each kill of the kernel log seen, whose member it
	// killed, judged once, at the first look after the kill was logged:
	// the pid is free for another process from then on.
	victims map[oomKey]victim
	// seenD, seenRole and seenKey are what one Apply met, to forget the
	// rest after it; kept between Applies so that a refresh of a large
	// host does not grow three maps afresh.
	seenD, seenRole map[proc.Identity]bool
	seenKey         map[proc.CgroupKey]bool
	// from is what the last Apply worked each sandbox's resources out
	// from, by position, and lastTicks its snapshot's clock ticks: a
	// sandbox none of whose inputs changed keeps the resources last holds
	// for it (see lastResources). spare is the other buffer.
	from, spare []workedFrom
	lastTicks   uint64
}

type oomBase struct {
	count uint64
	since time.Time
}

// oomKey names one kill of the kernel log.
type oomKey struct {
	at  int64 // Unix nanoseconds
	pid int
}

func killKey(k proc.OOMKill) oomKey { return oomKey{at: k.Time.UnixNano(), pid: k.PID} }

// victim is the sandbox (Key) a kill's victim was a member of, "" when it
// was none's, or unknown; vmm says it ran the sandbox's guest.
type victim struct {
	sandbox string
	vmm     bool
}

// role is which side of a sandbox a member is on.
type role uint8

const (
	roleWorkload role = iota
	roleRuntime
	roleGuest
)

// Trouble is the evidence behind the badges oom, stuck and hollow.
type Trouble struct {
	// OOM lists the OOM kills, newest last.
	OOM []OOMEvidence
	// Stuck lists the members in D for longer than the threshold.
	Stuck []StuckEvidence
	// Hollow says what is alive and what is gone ("" when not hollow).
	Hollow string
}

// OOMEvidence is one reason for the oom badge.
type OOMEvidence struct {
	// Source is "cgroup" (its oom_kill counter grew while watched) or
	// "kernel log".
	Source string
	Time   time.Time
	// Kills is how many kills the counter grew by (1 for a log line).
	Kills uint64
	// PID and Comm name the victim, from the kernel log (0 and "" for a
	// counter).
	PID  int
	Comm string
	// Host is true for a kill by the host-wide OOM killer (the host ran
	// out), false for one by a cgroup's limit.
	Host bool
	// VMM is true when the victim was the sandbox's VMM: the host killed
	// the guest's whole machine. A guest's own OOM kill happens inside
	// its kernel and is not visible from the host.
	VMM    bool
	Detail string
}

// StuckEvidence is one member in uninterruptible sleep.
type StuckEvidence struct {
	PID   int
	Comm  string
	Wchan string
	Since time.Time
}

// Apply returns v with every sandbox's resources worked out and the
// badges oom, stuck and hollow added where they hold. A sandbox that gains
// one is copied (the Builder shares sandboxes between views), so v itself
// is left as it was.
func (w *Watch) Apply(v *View) *View {
	if w.oomBase == nil {
		w.oomBase, w.dSince, w.roles = map[proc.CgroupKey]oomBase{}, map[proc.Identity]time.Time{}, map[proc.Identity]role{}
		w.seenD, w.seenRole, w.seenKey = map[proc.Identity]bool{}, map[proc.Identity]bool{}, map[proc.CgroupKey]bool{}
	}
	clear(w.seenD)
	clear(w.seenRole)
	clear(w.seenKey)
	seenD, seenRole, seenKey := w.seenD, w.seenRole, w.seenKey
	snap := v.Snapshot
	w.findVictims(snap.OOMKills)
	out := *v
	out.base = v
	if v.base != nil {
		out.base = v.base
	}
	// A sandbox whose figures did not change keeps its Resources of the
	// view before: views are never written once handed out.
	out.resources = make([]*Resources, len(v.Sandboxes))
	cloned := false
	role := func(sb *Sandbox, m *Member) role {
		r := w.role(sb, m)
		if m.Via == ViaRule {
			seenRole[m.ID()] = true
		}
		return r
	}
	from := grown(w.spare, len(v.Sandboxes))
	for i, sb := range v.Sandboxes {
		if len(sb.Members) == 0 {
			continue
		}
		cg := cgroupFigures(sb, snap)
		if r := w.lastResources(i, sb, snap, cg); r != nil {
			out.resources[i] = r
			keepRoles(sb, seenRole)
		} else {
			r := resourcesOf(sb, snap, cg, role)
			out.resources[i] = &r
		}
		from[i] = workedFrom{sb: sb, cg: cg}
		t := w.judge(sb, snap, out.resources[i], seenD, seenKey)
		if t == nil {
			continue
		}
		if !cloned {
			out.Sandboxes, cloned = slices.Clone(v.Sandboxes), true
		}
		c := *sb
		c.Trouble = t
		c.Badges = slices.Clone(sb.Badges)
		if len(t.OOM) > 0 {
			c.Badges = append(c.Badges, BadgeOOM)
		}
		if len(t.Stuck) > 0 {
			c.Badges = append(c.Badges, BadgeStuck)
		}
		if t.Hollow != "" {
			c.Badges = append(c.Badges, BadgeHollow)
		}
		out.Sandboxes[i] = &c
	}
	for id := range w.dSince {
		if !seenD[id] {
			delete(w.dSince, id)
		}
	}
	for id := range w.roles {
		if !seenRole[id] {
			delete(w.roles, id)
		}
	}
	for k := range w.oomBase {
		if !seenKey[k] {
			delete(w.oomBase, k)
		}
	}
	clear(w.from)
	w.from, w.spare, w.lastTicks = from, w.from, snap.ClockTicks
	w.last = &out
	return &out
}

// judge gathers a sandbox's trouble; nil when it has none.
func (w *Watch) judge(sb *Sandbox, snap *proc.Snapshot, r *Resources, seenD map[proc.Identity]bool, seenKey map[proc.CgroupKey]bool) *Trouble {
	var t Trouble
	if sb.Cgroup != "" || sb.Freezer != "" {
		key := proc.CgroupKey{V2: sb.Cgroup, V1: sb.Freezer}
		if r.OOMKills != nil {
			seenKey[key] = true
			base, ok := w.oomBase[key]
			// A counter below its base is a new cgroup at the old path
			// (a container restarted under the same name between two
			// refreshes): its count starts again from there.
			if !ok || *r.OOMKills < base.count {
				// Kills counted before the first look are history, not
				// news: a cgroup can become a sandbox's long after it
				// was made. The kernel log covers a kill in a cgroup
				// made and killed between two refreshes.
				base = oomBase{count: *r.OOMKills, since: snap.Time}
				w.oomBase[key] = base
			}
			if *r.OOMKills > base.count {
				t.OOM = append(t.OOM, OOMEvidence{
					Source: "cgroup", Time: snap.Time, Kills: *r.OOMKills - base.count,
					Detail: fmt.Sprintf("oom_kill in %s grew from %d to %d since %s", cgroupName(sb), base.count, *r.OOMKills, base.since.UTC().Format(time.TimeOnly)),
				})
			}
		}
	}
	for _, k := range snap.OOMKills {
		if e, ok := w.killOf(sb, k); ok {
			t.OOM = append(t.OOM, e)
		}
	}
	stuckAfter := w.StuckAfter
	if stuckAfter <= 0 {
		stuckAfter = DefaultStuckAfter
	}
	for _, m := range sb.Members {
		// A frozen task shows as D too (waiting in __refrigerator): a
		// paused sandbox is paused, not stuck.
		if m.State != 'D' || snap.Cgroups[m.Cgroup].Frozen || snap.Freezers[m.Freezer].Frozen {
			continue
		}
		id := m.ID()
		seenD[id] = true
		since, ok := w.dSince[id]
		if !ok {
			since = snap.Time
			w.dSince[id] = since
		}
		if snap.Time.Sub(since) >= stuckAfter {
			t.Stuck = append(t.Stuck, StuckEvidence{PID: m.PID, Comm: m.Comm, Wchan: snap.Wchans[m.PID], Since: since})
		}
	}
	t.Hollow = w.hollow(sb, snap, r)
	if len(t.OOM) == 0 && len(t.Stuck) == 0 && t.Hollow == "" {
		return nil
	}
	// A copy, so that only a sandbox in trouble costs an allocation.
	found := t
	return &found
}

// findVictims judges, for each kill of the log not judged before, whose
// member its victim was. The log names the victim by pid and comm only,
// and the pid may since belong to another process: the victim is a
// process of the last view with that pid and comm that started before
// the kill. A kill logged before the first look has no view to name its
// victim (a process with its pid now is another), and one whose victim
// the last view did not hold has none either: only its memory cgroup can
// place those. Kills that left the log's window are forgotten.
func (w *Watch) findVictims(kills []proc.OOMKill) {
	if w.victims == nil {
		w.victims = map[oomKey]victim{}
	}
	if len(kills) == 0 {
		clear(w.victims)
		return
	}
	seen := make(map[oomKey]bool, len(kills))
	for _, k := range kills {
		key := killKey(k)
		seen[key] = true
		if _, ok := w.victims[key]; ok {
			continue
		}
		var v victim
		if last := w.last; last != nil && last.Snapshot != nil {
			p := last.Snapshot.Proc(k.PID)
			if p != nil && p.Comm == unescapeHex(k.Comm) && !last.Snapshot.StartTime(p).After(k.Time) {
				if sb := last.SandboxOf(p.ID()); sb != nil {
					v = victim{sandbox: sb.Key(), vmm: w.roles[p.ID()] == roleGuest}
				}
			}
		}
		w.victims[key] = v
	}
	for key := range w.victims {
		if !seen[key] {
			delete(w.victims, key)
		}
	}
}

// killOf reports whether a kernel-log kill was in sb: its victim's memory
// cgroup is the sandbox's (v2, or v1 memory, which runtimes name like the
// freezer), or the victim was a member in the view before the kill (see
// findVictims).
func (w *Watch) killOf(sb *Sandbox, k proc.OOMKill) (OOMEvidence, bool) {
	e := OOMEvidence{Source: "kernel log", Time: k.Time, Kills: 1, PID: k.PID, Comm: k.Comm, Host: k.Host()}
	in := (sb.Cgroup != "" && within(k.TaskMemcg, sb.Cgroup)) || (sb.Freezer != "" && within(k.TaskMemcg, sb.Freezer))
	if v := w.victims[killKey(k)]; v.sandbox != "" && v.sandbox == sb.Key() {
		in, e.VMM = true, v.vmm
	}
	if !in {
		return OOMEvidence{}, false
	}
	who := "the host ran out of memory"
	if !e.Host {
		who = "the limit of " + k.OOMMemcg + " was hit"
	}
	what := fmt.Sprintf("pid %d (%s)", k.PID, k.Comm)
	if e.VMM {
		what = "the VMM, " + what + ", and with it the guest"
	}
	e.Detail = fmt.Sprintf("the kernel's OOM killer killed %s in %s: %s", what, k.TaskMemcg, who)
	return e, true
}

// hollow says why a sandbox is hollow: its runtime's side lives, older
// than HollowAfter, and its workload is gone.
func (w *Watch) hollow(sb *Sandbox, snap *proc.Snapshot, r *Resources) string {
	if r.Overhead.Processes == 0 || r.Workload.Processes > 0 || sb.Paused {
		return ""
	}
	var oldest *Member
	for _, m := range sb.Members {
		if !m.Zombie() && w.role(sb, m) == roleRuntime && (oldest == nil || m.Start < oldest.Start) {
			oldest = m
		}
	}
	if oldest == nil || snap.Time.Sub(snap.StartTime(oldest.Process)) < HollowAfter {
		return ""
	}
	return fmt.Sprintf("%s pid %d is alive, and no workload process is left (no container, payload or guest)", oldest.Comm, oldest.PID)
}

// role says which side of sb member m is on: a process a rule recognises
// as the runtime's own (a shim, conmon, a jailer) or as a guest's VMM is
// that wherever it lives; else, with a dedicated cgroup, that cgroup is
// the workload and anything outside it the runtime's; without one, the
// rest is the workload.
func (w *Watch) role(sb *Sandbox, m *Member) role {
	if m.Via == ViaRule {
		id := m.ID()
		r, ok := w.roles[id]
		if !ok {
			r = ruleRole(sb, m)
			w.roles[id] = r
		}
		if r != roleWorkload {
			return r
		}
	}
	if (sb.Cgroup != "" || sb.Freezer != "") && !inCgroup(sb, m) {
		return roleRuntime
	}
	return roleWorkload
}

// inCgroup reports whether m lives in sb's dedicated cgroup.
func inCgroup(sb *Sandbox, m *Member) bool {
	return within(m.Cgroup, sb.Cgroup) || within(m.Freezer, sb.Freezer)
}

// ruleRole asks the sandbox's rules which one recognises m by more than
// its cgroup.
func ruleRole(sb *Sandbox, m *Member) role {
	switch r := sb.recognising(m); {
	case r == nil:
		return roleWorkload
	case r.Guest:
		return roleGuest
	default:
		return roleRuntime
	}
}

// ownRules are the rules that found the sandbox's processes; a sandbox
// built by hand (a test's, a recording's) has its Rule alone.
func (sb *Sandbox) ownRules() []*Rule {
	if len(sb.rules) == 0 && sb.Rule != nil {
		return []*Rule{sb.Rule}
	}
	return sb.rules
}

// recognising is the first of the sandbox's rules that recognises m by
// more than its cgroup, nil when none does.
func (sb *Sandbox) recognising(m *Member) *Rule {
	for _, r := range sb.ownRules() {
		if r.onlyCgroup() {
			continue
		}
		if _, ok := r.Match(m.Process); ok {
			return r
		}
	}
	return nil
}

// ExitsAfterWorkload reports whether a rule of the sandbox recognises m
// as a monitor that exits by itself once the workload has (see
// Rule.ExitsAfterWorkload).
func (sb *Sandbox) ExitsAfterWorkload(m *Member) bool {
	r := sb.recognising(m)
	return r != nil && r.ExitsAfterWorkload
}

// HaltSignal is the signal a teardown halts m with in place of SIGTERM
// (see Rule.HaltSignal), 0 for SIGTERM: set when a rule of the sandbox
// names one and m is the init of a pid namespace (pid 1 in the innermost
// of its NSpid) at the top of the sandbox's tree. An init below another
// member is one the sandbox made for itself, and its runtime restarts
// nothing.
func (sb *Sandbox) HaltSignal(m *Member) syscall.Signal {
	if m.Parent != nil || !proc.NamespaceInit(m.NSpid) {
		return 0
	}
	for _, r := range sb.ownRules() {
		if r.HaltSignal != 0 {
			return r.HaltSignal
		}
	}
	return 0
}

// cgroupName is the sandbox's dedicated cgroup as an operator knows it.
func cgroupName(sb *Sandbox) string {
	if sb.Cgroup != "" {
		return sb.Cgroup
	}
	return sb.Freezer
}
