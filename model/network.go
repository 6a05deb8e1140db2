package model

import (
	"slices"

	"github.com/sandtop/sandtop/proc"
)

// Network returns the network namespaces of sb's members, each once, in
// the order of the first member in each, as a proc.NetworkReader read
// them; nil when they were not read (the screen reads them only for its
// detail pane; `list --json` for every sandbox). The listeners of a
// namespace are its own, not matched to the members' sockets: a sandbox
// shows what listens in its network namespace, and of the host's
// namespace (Host) nothing.
func (v *View) Network(sb *Sandbox) []*proc.NetNS {
	snap := v.Snapshot
	if sb == nil || snap == nil || snap.NetnsOf == nil {
		return nil
	}
	var out []*proc.NetNS
	for _, m := range sb.Members {
		n := snap.Networks[snap.NetnsOf[m.PID]]
		if n != nil && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// NetworkWants lists the processes a proc.NetworkReader reads through
// for what n asks: the members of every sandbox with n.Network, of the
// sandboxes in n.Full otherwise. Zombies and kernel threads have no
// namespace to read.
func NetworkWants(v *View, n ResourceNeeds) []int {
	if !n.Network && len(n.Full) == 0 {
		return nil
	}
	var pids []int
	for _, sb := range v.Sandboxes {
		if !n.Network && !n.Full[sb.Key()] {
			continue
		}
		for _, m := range sb.Members {
			if !m.Zombie() && !m.Kernel {
				pids = append(pids, m.PID)
			}
		}
	}
	return pids
}
