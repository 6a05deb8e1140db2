package model

import "github.com/sandtop/sandtop/proc"

// A sandbox's resources are worked out from its members (the *Process
// of each and the role the Watch gives it), its dedicated cgroup's
// figures and the snapshot's clock ticks. The Builder hands a sandbox
// none of whose members changed out again as the same *Sandbox, at the
// same position, and a Process is never written once handed out: when
// the cgroup's figures and the clock ticks did not change either, the
// resources the last Apply worked out stand. At 1,000 sandboxes that was
// most of an Apply, and a dozen small allocations per sandbox.

// workedFrom is what an Apply worked the resources of the sandbox at one
// position out from: the sandbox and its cgroup's figures (nil for none),
// which, like the rest of a snapshot, are never written once handed out
// (a ResourceReader makes new ones for each snapshot).
type workedFrom struct {
	sb *Sandbox
	cg *proc.CgroupResources
}

// cgroupFigures returns the figures of sb's dedicated cgroup in snap, nil
// when it has none or they were not read.
func cgroupFigures(sb *Sandbox, snap *proc.Snapshot) *proc.CgroupResources {
	if sb.Cgroup == "" && sb.Freezer == "" {
		return nil
	}
	return snap.Resources[proc.CgroupKey{V2: sb.Cgroup, V1: sb.Freezer}]
}

// lastResources returns the resources the last Apply worked out for sb
// at position i, when they stand for snap; nil when they do not.
func (w *Watch) lastResources(i int, sb *Sandbox, snap *proc.Snapshot, cg *proc.CgroupResources) *Resources {
	if w.last == nil || i >= len(w.from) || i >= len(w.last.resources) || snap.ClockTicks != w.lastTicks {
		return nil
	}
	f := w.from[i]
	// The figures are compared, not only the pointers: a reader hands
	// out new ones when it reads a cgroup again. Struct equality takes
	// -0 for 0 in the float figures, and no figure the kernel writes is
	// negative.
	if f.sb != sb || (f.cg == nil) != (cg == nil) || (cg != nil && cg != f.cg && *cg != *f.cg) {
		return nil
	}
	return w.last.resources[i]
}

// keepRoles marks the roles of sb's members as met, as working its
// resources out would have: the next Apply may need them, and a victim of
// the kernel log is named a VMM by its member's role.
func keepRoles(sb *Sandbox, seenRole map[proc.Identity]bool) {
	for _, m := range sb.Members {
		if m.Via == ViaRule && !m.Zombie() {
			seenRole[m.ID()] = true
		}
	}
}
