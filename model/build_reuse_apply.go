package model

import (
	"slices"

	"github.com/sandtop/sandtop/proc"
)

// apply makes the view of the new snapshot from the previous one and the
// changes the walk found and classified: sandboxes none of whose members
// changed are shared, those that gained or lost members are laid again,
// the others copied with their new processes, each judged again. The
// Member of each process by position (r.at) is pointed at the new members.
// It returns nil when a change turns out to need a full Build after all.
func (r *incremental) apply() *View {
	l, snap, prev := r.l, r.snap, r.prev
	cgroups := sameStates(snap.Cgroups, l.snap.Cgroups) && sameStates(snap.Freezers, l.snap.Freezers)
	listeners := sameListeners(snap.Listeners, l.snap.Listeners)
	v := &View{
		Time:         snap.Time,
		Host:         snap.Hostname,
		Snapshot:     snap,
		Sandboxes:    make([]*Sandbox, len(prev.Sandboxes)),
		Unattributed: r.unattributed(),
		byID:         prev.byID,
	}
	// Sandboxes that gained or lost members get their trees laid again;
	// remap says where each surviving Member went.
	var remap map[*Member]*Member
	if r.regrow != nil {
		remap = map[*Member]*Member{}
	}
	for k, sb := range prev.Sandboxes {
		switch {
		case r.regrow != nil && r.regrow[k]:
			if sb = r.rebuild(sb, remap); sb == nil {
				return nil // the root changed: not a leaf's business
			}
		case !cgroups || (r.dirty != nil && r.dirty[k]) || (!listeners && sb.socket != "") ||
			(sb.Supervisor != nil && snap.Proc(sb.Supervisor.PID) != sb.Supervisor):
			sb = r.refresh(sb)
		}
		v.Sandboxes[k] = sb
	}
	at := r.at
	if at == nil {
		// No process was born or exited: while every sandbox is shared,
		// so are the members by position.
		if slices.Equal(v.Sandboxes, prev.Sandboxes) {
			v.members = l.members
			return v
		}
		at = slices.Clone(l.members)
	}
	for i, m := range at {
		switch {
		case m == nil:
		case remap[m] != nil:
			at[i] = remap[m]
		default:
			at[i] = v.Sandboxes[m.sb].Members[m.ord]
		}
	}
	for _, jn := range r.joins {
		at[jn.pos] = r.born[jn.p]
	}
	v.members = at
	return v
}

// rebuild lays out again a sandbox that gained or lost members, as a full
// Build would: members in pid order under their parents, the root and the
// supervisor unchanged (nil if the root would change). remap receives the
// new Member of each surviving one.
func (r *incremental) rebuild(old *Sandbox, remap map[*Member]*Member) *Sandbox {
	gone := map[*Member]bool{}
	for _, m := range r.gone {
		gone[m] = true
	}
	slab := make([]Member, 0, len(old.Members)+len(r.joins))
	for _, m := range old.Members {
		if !gone[m] {
			slab = append(slab, Member{Process: r.now(m), Via: m.Via, MatchedBy: m.MatchedBy, sb: old.idx})
		}
	}
	for _, jn := range r.joins {
		if jn.sb == old.idx {
			slab = append(slab, Member{Process: jn.p, Via: jn.via, MatchedBy: jn.by, sb: old.idx})
		}
	}
	slices.SortFunc(slab, func(a, b Member) int { return a.PID - b.PID })
	ms := make([]*Member, len(slab))
	byPID := make(map[int]*Member, len(slab))
	for k := range slab {
		ms[k] = &slab[k]
		byPID[slab[k].PID] = ms[k]
	}
	sb := *old
	kids := newChunks[*Member](len(ms))
	layTree(&sb, ms, func(m *Member) *Member { return byPID[m.PPID] }, &kids)
	if sb.Root.PID != old.Root.PID {
		return nil
	}
	for _, m := range old.Members {
		if !gone[m] {
			remap[m] = byPID[m.PID]
		}
	}
	if r.born == nil {
		r.born = map[*proc.Process]*Member{}
	}
	for _, jn := range r.joins {
		if jn.sb == old.idx {
			r.born[jn.p] = byPID[jn.p.PID]
		}
	}
	r.rejudge(&sb, old)
	return &sb
}

// rejudge refreshes what sb, a copy of old with this snapshot's members,
// says about its supervisor and its badges.
func (r *incremental) rejudge(sb, old *Sandbox) {
	if old.Supervisor != nil {
		sb.Supervisor = r.snap.Proc(old.Supervisor.PID)
	}
	if old.socket != "" {
		judgeSocket(sb, r.snap.Listeners)
	}
	sb.Orphan = sb.supOrphan
	badge(sb, r.snap)
}

// refresh copies old with the processes of snap: the same members, tree and
// supervisor, with badges and the socket supervisor judged again.
func (r *incremental) refresh(old *Sandbox) *Sandbox {
	sb := *old
	slab := make([]Member, len(old.Members))
	kids := 0
	for k, m := range old.Members {
		slab[k] = *m
		slab[k].Process = r.now(m)
		if m.Parent != nil {
			slab[k].Parent = &slab[m.Parent.ord]
		}
		kids += len(m.Children)
	}
	backing := make([]*Member, kids)
	sb.Members = make([]*Member, len(slab))
	for k, m := range old.Members {
		sb.Members[k] = &slab[k]
		if n := len(m.Children); n > 0 {
			c := backing[:n:n]
			backing = backing[n:]
			for x, ch := range m.Children {
				c[x] = &slab[ch.ord]
			}
			slab[k].Children = c
		}
	}
	sb.Root = &slab[old.Root.ord]
	r.rejudge(&sb, old)
	return &sb
}

func sameStates(a, b map[string]proc.CgroupState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, s := range a {
		if t, ok := b[k]; !ok || t != s {
			return false
		}
	}
	return true
}

func sameListeners(a, b map[string]bool) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// unattributed lists the user processes of snap in no sandbox: those
// that were in none and the newborns that joined none.
func (r *incremental) unattributed() []*proc.Process {
	members := r.at
	if members == nil {
		members = r.l.members
	}
	var list []*proc.Process
	joins := r.joins // in pid order, as the walk found them
	for i, p := range r.snap.Procs {
		if len(joins) > 0 && joins[0].pos == i {
			joins = joins[1:]
			continue
		}
		if members[i] == nil {
			list = appendUser(list, p)
		}
	}
	return list
}

func appendUser(list []*proc.Process, p *proc.Process) []*proc.Process {
	if p.Kernel {
		return list
	}
	return append(list, p)
}
