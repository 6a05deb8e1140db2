package model

import "github.com/sandtop/sandtop/proc"

// SettledCgroups names the dedicated v2 cgroups of the sandboxes of v
// nothing of whose processes a front end shows (see proc.ScanHints):
// those outside n.Shown, not expanded (n.Open) and not in the detail pane
// (n.Full). Every process in a dedicated cgroup is its sandbox's member,
// so no other row shows one. Nil when n.Shown is: every sandbox is shown.
// last, the answer before, is returned again when the answer is the same
// (it is read-only, as a snapshot's fields are).
func SettledCgroups(v *View, n ResourceNeeds, last map[string]bool) map[string]bool {
	if v == nil || n.Shown == nil {
		return nil
	}
	settled := func(sb *Sandbox) bool {
		if sb.Cgroup == "" || sb.Cgroup == "/" {
			return false
		}
		k := sb.Key()
		return !n.Shown[k] && !n.Open[k] && !n.Full[k]
	}
	count, same := 0, last != nil
	for _, sb := range v.Sandboxes {
		if settled(sb) {
			count++
			same = same && last[sb.Cgroup]
		}
	}
	if same && count == len(last) {
		return last
	}
	out := make(map[string]bool, count)
	for _, sb := range v.Sandboxes {
		if settled(sb) {
			out[sb.Cgroup] = true
		}
	}
	return out
}

// SettledAside names the members of the sandboxes whose cgroups settled
// holds (SettledCgroups) that are in no settled cgroup themselves: the
// shims and monitors beside a container's cgroup, whose stat a scan may
// then carry (see proc.ScanHints.Aside). Nil while the rows are in order
// of CPU use (n.CPUOrder), which a carried CPU time would hold back. last
// is returned again when the answer is the same, as by SettledCgroups.
func SettledAside(v *View, settled map[string]bool, n ResourceNeeds, last map[proc.Identity]bool) map[proc.Identity]bool {
	if v == nil || len(settled) == 0 || n.CPUOrder {
		return nil
	}
	aside := func(yield func(proc.Identity) bool) {
		for _, sb := range v.Sandboxes {
			if !settled[sb.Cgroup] {
				continue
			}
			// Most members share a cgroup with the member before (the
			// sandbox's own, at first): that one is not looked up again.
			cg, in := sb.Cgroup, true
			for _, m := range sb.Members {
				if m.Cgroup != cg {
					cg, in = m.Cgroup, settled[m.Cgroup]
				}
				if !in && !yield(m.ID()) {
					return
				}
			}
		}
	}
	count, same := 0, last != nil
	for id := range aside {
		count++
		same = same && last[id]
	}
	if count == 0 {
		return nil
	}
	if same && count == len(last) {
		return last
	}
	out := make(map[proc.Identity]bool, count)
	for id := range aside {
		out[id] = true
	}
	return out
}
