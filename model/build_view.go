package model

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sandtop/sandtop/model/words"
	"github.com/sandtop/sandtop/proc"
)

// finish builds member trees, supervisors and badges, and the indexes.
func (w *build) finish() *View {
	v := &View{
		Time:      w.snap.Time,
		Host:      w.snap.Hostname,
		Snapshot:  w.snap,
		Sandboxes: w.sorted(),
		byID:      make(map[string]int32, len(w.byID)),
	}
	members := make(map[*Sandbox][]*Member, len(w.procs))
	for i, sb := range v.Sandboxes {
		sb.idx = int32(i)
		v.byID[sb.Key()] = sb.idx
		members[sb] = make([]*Member, 0, len(w.procs[sb]))
	}
	for k, sb := range w.folded {
		if _, taken := v.byID[k]; !taken {
			v.byID[k] = sb.idx
		}
	}
	// byPos holds the Member of each attributed process, by position; the
	// next Build compares against it (see reuse).
	byPos := make([]*Member, len(w.snap.Procs))
	// One allocation for every Member: a Member per process per full Build was
	// a tenth of it.
	slab := make([]Member, w.attributed)
	for i, p := range w.snap.Procs {
		sb := w.owner[i]
		if sb == nil {
			if !p.Kernel {
				v.Unattributed = append(v.Unattributed, p)
			}
			continue
		}
		m := &slab[0]
		slab = slab[1:]
		*m = Member{Process: p, Via: w.via[i], MatchedBy: w.by[i], sb: sb.idx}
		byPos[i] = m
		members[sb] = append(members[sb], m)
	}
	// A parent per ten members is plenty: a container shim parents them
	// all, a vm0 chain one each.
	w.childChunks = newChunks[*Member](w.attributed / 10 * chunkLen)
	for _, sb := range v.Sandboxes {
		w.tree(sb, members[sb], byPos)
		w.supervise(sb)
		w.rootless(sb)
		sb.Orphan = sb.supOrphan
		badge(sb, w.snap)
		sb.Cleanup, sb.CleanupRefused = w.cleanup(sb)
		sb.Reconcile, sb.Inspect = w.reconcile(sb)
		sb.rules = w.rules[sb]
	}
	v.members, w.last.members = byPos, byPos
	return v
}

// tree links members to their member parents, picks the root and lays the
// members out in pre-order.
func (w *build) tree(sb *Sandbox, ms []*Member, byPos []*Member) {
	layTree(sb, ms, func(m *Member) *Member {
		if i := w.ix.of(m.PPID); i >= 0 && w.owner[i] == sb {
			return byPos[i]
		}
		return nil
	}, &w.childChunks)
}

// layTree links the members ms (in pid order) to their parents as
// parentOf finds them, picks the root, marks the members that left their
// tree, and lays the members out in sb.Members in pre-order.
func layTree(sb *Sandbox, ms []*Member, parentOf func(*Member) *Member, kids *chunks[*Member]) {
	var tops []*Member
	for _, m := range ms { // in pid order, so children end up by pid
		if parent := parentOf(m); parent != nil && m.PPID != m.PID {
			m.Parent = parent
			parent.Children = kids.add(parent.Children, m)
		} else {
			tops = append(tops, m)
		}
	}
	tops = breakCycles(ms, tops)
	root := slices.MinFunc(tops, func(a, b *Member) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.PID, b.PID))
	})
	sb.Root = root
	for _, m := range tops {
		// A top-level member other than the root has left its tree when
		// it is in the sandbox only because of where it lives (its
		// cgroup, by rule 3 or by a cgroup matcher) or what it was
		// (sticky), or when init adopted it. A container process's parent
		// is its shim or its container's init, both members once the shim
		// is recognised (a pod's shim is folded into the pod). One that a
		// rule recognised by its own argv stands on its own.
		m.Escaped = m != root && (m.PPID <= 1 || m.Via == ViaCgroup || m.Via == ViaSticky || m.MatchedBy == ByCgroup)
	}
	sb.Members = make([]*Member, 0, len(ms))
	walk := func(top *Member) {
		top.Depth = 0
		preOrder(top, func(m *Member) {
			if m.Parent != nil && m != top {
				m.Depth = m.Parent.Depth + 1
			}
			m.ord = int32(len(sb.Members))
			sb.Members = append(sb.Members, m)
		})
	}
	walk(root)
	for _, m := range tops {
		if m != root {
			walk(m)
		}
	}
}

// preOrder calls visit on top and its descendants, parents before their
// children, children in order, without recursion: a chain of processes
// can be as deep as a sandbox has pids.
func preOrder(top *Member, visit func(*Member)) {
	stack := []*Member{top}
	for len(stack) > 0 {
		m := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		visit(m)
		for i := len(m.Children) - 1; i >= 0; i-- {
			stack = append(stack, m.Children[i])
		}
	}
}

// breakCycles returns tops with a member of every parent cycle among ms
// added. The kernel never makes one, but a snapshot can: a process read
// before its parent died and its pid was reused by one of its descendants.
// A cycle is unreachable from tops, so the pre-order walk would drop its
// members (or, with no tops at all, never end): its lowest pid is cut from
// its parent and becomes a top.
func breakCycles(ms, tops []*Member) []*Member {
	const unseen = -1
	for _, m := range ms {
		m.ord = unseen
	}
	mark := func(top *Member) { preOrder(top, func(m *Member) { m.ord = 0 }) }
	for _, m := range tops {
		mark(m)
	}
	for _, m := range ms {
		if m.ord != unseen {
			continue
		}
		p := m.Parent
		p.Children = slices.DeleteFunc(p.Children, func(c *Member) bool { return c == m })
		m.Parent = nil
		tops = append(tops, m)
		mark(m)
	}
	return tops
}

// supervise finds the sandbox's supervisor and decides whether it is gone.
func (w *build) supervise(sb *Sandbox) {
	// The sandbox's own rule first, then any other rule that recognised
	// part of it (a pod's shim names containerd's socket).
	sup := Supervisor{}
	for _, r := range append([]*Rule{sb.Rule}, w.rules[sb]...) {
		if r != nil && !r.Supervisor.IsZero() {
			sup = r.Supervisor
			break
		}
	}
	switch {
	case sup.Ancestor != nil:
		// Every pid the walk looks at, found or not, is remembered: a
		// change there can change the verdict (see reuse).
		pid := sb.Root.PPID
		for depth := 0; pid > 1 && depth < maxSupervisorDepth; depth++ {
			w.last.supWalk[pid] = struct{}{}
			p := w.snap.Proc(pid)
			if p == nil {
				break
			}
			if sup.Ancestor.MatchString(strings.Join(p.Argv, " ")) {
				sb.Supervisor, sb.Supervised = p, true
				sb.SupervisorNote = "supervisor " + describe(p) + " is an ancestor"
				return
			}
			pid = p.PPID
		}
		sb.supOrphan = true
		// The pattern itself is in the rule (sandtop rules prints it); it is
		// too long for a one-line reason.
		sb.SupervisorNote = "supervisor gone: no ancestor within 16 levels matches the rule's supervisor pattern"
	case sup.SocketFlag != "":
		path := ""
		for _, p := range w.matched[sb] {
			if v, ok := FlagValue(p.Argv, sup.SocketFlag); ok {
				path = v
				break
			}
		}
		sb.socket = strings.TrimPrefix(path, "unix://")
		if sb.socket == "" {
			sb.SupervisorNote = "no " + sup.SocketFlag + " flag: supervisor unknown"
			return
		}
		judgeSocket(sb, w.snap.Listeners)
	default:
		sb.SupervisorNote = "rule names no supervisor"
		if sb.Rule == nil {
			sb.SupervisorNote = "no rule"
		}
	}
}

// rootless marks a sandbox that nothing but a rule-recognised cgroup
// names although its runtime has rules for its root process (the shim
// died while containerd was down, boxlite's outer bwrap was killed alone,
// a kill stopped halfway): its root and supervisor are gone, it is an
// orphan, and kill takes it down through that cgroup.
func (w *build) rootless(sb *Sandbox) {
	sb.CgroupOnly = false
	if !w.rooted[sb.Runtime] {
		return
	}
	where, matched := sb.Cgroup, false
	for _, m := range sb.Members {
		// A dead root (a zombie shim nobody reaps) is no root.
		if m.Via != ViaRule && m.Via != ViaGroup || m.Zombie() {
			continue
		}
		matched = true
		if r, _ := w.match(m.Process); r.Rule == nil || !r.Rule.onlyCgroup() {
			return
		}
		if where == "" {
			where = cmp.Or(m.Cgroup, m.Freezer)
		}
	}
	if !matched {
		return
	}
	sb.CgroupOnly, sb.Supervised, sb.Supervisor, sb.supOrphan = true, false, nil, true
	sb.SupervisorNote = "root and supervisor gone: only its cgroup " + where + " names it; no " + sb.Runtime + " process (shim, monitor) is left"
}

// judgeSocket decides whether sb's supervisor, known by the socket it
// listens on, is alive.
func judgeSocket(sb *Sandbox, listeners map[string]bool) {
	sb.Supervised, sb.supOrphan = false, false
	switch {
	case listeners == nil:
		sb.SupervisorNote = "unix sockets unreadable: supervisor unknown"
	case listeners[sb.socket]:
		sb.Supervised = true
		sb.SupervisorNote = "supervisor listens on " + sb.socket
	default:
		sb.supOrphan = true
		sb.SupervisorNote = "supervisor gone: nothing listens on " + sb.socket
	}
}

func describe(p *proc.Process) string {
	name := p.Comm
	if len(p.Argv) > 0 {
		name = p.Argv[0]
	}
	return name + " (pid " + strconv.Itoa(p.PID) + ")"
}

// badge derives zombie, escaped and paused state and the badge list from
// the members and the supervisor's verdict (sb.Orphan on entry, which
// escaped members leave alone: an escaped child is not a lost supervisor).
//
// A sandbox is paused when its workload is: `ctr task pause`, `docker
// pause` and `podman pause` freeze the container's own cgroup, while the
// shim (or conmon) that runs it lives outside that cgroup and keeps
// running. So the workload is the members inside the sandbox's dedicated
// cgroup (v2 or v1 freezer); with no dedicated cgroup it is every member,
// and the sandbox is paused when all of them are frozen or stopped.
func badge(sb *Sandbox, snap *proc.Snapshot) {
	live, stopped, frozen := 0, 0, 0
	work, workFrozen := 0, 0
	sb.Zombies, sb.Escaped, sb.Badges = 0, 0, nil
	for _, m := range sb.Members {
		if m.Zombie() {
			sb.Zombies++
			continue
		}
		if m.Escaped {
			sb.Escaped++
		}
		live++
		if m.Stopped() {
			stopped++
		}
		isFrozen := snap.Cgroups[m.Cgroup].Frozen || snap.Freezers[m.Freezer].Frozen
		if isFrozen {
			frozen++
		}
		if within(m.Cgroup, sb.Cgroup) || within(m.Freezer, sb.Freezer) {
			work++
			if isFrozen {
				workFrozen++
			}
		}
	}
	if sb.Cgroup == "" && sb.Freezer == "" {
		work, workFrozen = live, frozen
	}
	sb.Dead = live == 0
	sb.Frozen = work > 0 && workFrozen == work
	sb.FrozenProcesses, sb.WorkloadProcesses = frozen, work
	sb.Paused = sb.Frozen || (live > 0 && stopped == live)
	sb.PausedNote = pausedNote(sb, live, stopped, frozen, work)
	if sb.Orphan {
		sb.Badges = append(sb.Badges, BadgeOrphan)
	}
	if sb.Zombies > 0 {
		sb.Badges = append(sb.Badges, BadgeZombie)
	}
	if sb.Paused {
		sb.Badges = append(sb.Badges, BadgePaused)
	}
}

// pausedNote says which part of a paused sandbox is frozen or stopped.
func pausedNote(sb *Sandbox, live, stopped, frozen, work int) string {
	where := sb.Cgroup
	if where == "" || sb.Freezer != "" && sb.Freezer != sb.Cgroup {
		where = cmp.Or(sb.Freezer, sb.Cgroup)
	}
	switch {
	case !sb.Paused:
		return ""
	case sb.Frozen && frozen == live:
		if where == "" {
			return "frozen: " + words.All(live, "process", "processes")
		}
		return fmt.Sprintf("frozen: %s, in %s", words.All(live, "process", "processes"), where)
	case sb.Frozen:
		return fmt.Sprintf("workload frozen: %s in %s; %d outside it (the runtime's shim or monitor) still running", words.Count(work, "process", "processes"), where, live-frozen)
	}
	return fmt.Sprintf("stopped: %s (SIGSTOP)", words.All(stopped, "live process", "live processes"))
}

// within reports whether the cgroup path is dir or below it. It is asked
// for every member of every sandbox at every refresh, so it builds no
// string.
func within(path, dir string) bool {
	return dir != "" && path != "" && (dir == "/" || strings.HasPrefix(path, dir) &&
		(len(path) == len(dir) || path[len(dir)] == '/'))
}

// cleanup expands the cleanup templates of every rule that matched the
// sandbox with the sandbox's captures, keeping only safe paths (see
// Match.CleanupPaths); an unusable template is dropped, not guessed at,
// and one refused for its values is said in refused, so that a teardown
// can say why it removes nothing.
func (w *build) cleanup(sb *Sandbox) (out, refused []string) {
	for _, r := range w.rules[sb] {
		paths, err := Match{Rule: r, ID: sb.ID, Vars: sb.Vars}.CleanupPaths()
		for _, p := range paths {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
		joined, ok := err.(interface{ Unwrap() []error })
		if !ok {
			continue
		}
		for _, e := range joined.Unwrap() {
			if errors.Is(e, ErrUnsafeCleanup) && !slices.Contains(refused, e.Error()) {
				refused = append(refused, e.Error())
			}
		}
	}
	return out, refused
}

// reconcile picks the runtime's own command to run after a kill, and the
// one that asks the runtime's view, from the first rule that recognised
// the sandbox (in rules order) whose reconcile command expands in full
// with the sandbox's captures; the inspect command is that rule's, nil
// when it has none or it does not expand.
func (w *build) reconcile(sb *Sandbox) (reconcile, inspect []string) {
	rs := slices.Clone(w.rules[sb])
	slices.SortFunc(rs, func(a, b *Rule) int { return cmp.Compare(w.ruleIndex[a], w.ruleIndex[b]) })
	// A root in a pid namespace below sandtop's is a sandbox's own
	// process, whatever its name: its command line, which fills a
	// process rule's command (podman's storage paths), is never trusted
	// with running the runtime's command, as its owner or as root.
	nested := sb.Root != nil && len(sb.Root.NSpid) > 1
	for _, r := range rs {
		if nested && !r.onlyCgroup() {
			continue
		}
		m := Match{Rule: r, ID: sb.ID, Vars: sb.Vars}
		if argv, err := m.ReconcileArgv(); err == nil && len(argv) > 0 {
			inspect, _ = m.InspectArgv()
			return argv, inspect
		}
	}
	return nil, nil
}
