package model

import (
	"slices"

	"github.com/sandtop/sandtop/proc"
)

// Resource sources: where a sandbox's workload figures come from.
const (
	SourceCgroup    = "cgroup"
	SourceProcesses = "processes"
)

// Resources is what a sandbox uses and may use. The workload's CPU and
// memory come from its dedicated cgroup when the host has those figures
// there (Source "cgroup": they count every task the cgroup ever had, the
// dead ones' CPU too, and the page cache it is charged for), else from its
// members' /proc figures; the runtime's processes outside that cgroup (a
// shim, conmon) are overhead and are added from /proc. A figure the
// cgroup does not have is nil (the limits also when there is none).
type Resources struct {
	Source     string
	CPUSeconds float64
	// MemoryBytes is the cgroup's memory (page cache included) or the
	// members' resident set.
	MemoryBytes     uint64
	MemoryPeakBytes *uint64
	// MemoryLimitBytes is nil when the sandbox has no memory limit (or
	// no cgroup to have one in).
	MemoryLimitBytes *uint64
	CPULimitCores    *float64
	// PIDs counts tasks (threads included, as pids.max counts them).
	PIDs      uint64
	PIDsLimit *uint64
	// IOReadBytes and IOWriteBytes are the block IO the cgroup was
	// charged for.
	IOReadBytes, IOWriteBytes *uint64
	// OOMKills counts the OOM kills in the cgroup over its life.
	OOMKills *uint64
	// Pressure is some avg10, in percent, of the cgroup's pressure files.
	Pressure Pressure
	// Overhead is the runtime's part (shims, conmon, jailers, gofers,
	// every member outside the dedicated cgroup), Workload the rest:
	// the container, the payload, or for a VM the guest as the host sees
	// it (the VMM process: vCPU threads and device emulation together,
	// which the host cannot tell apart). WorkloadNote says which.
	Overhead, Workload Part
	WorkloadNote       string
	// Asked is the figures the cgroup was asked for (0 when unknown).
	Asked proc.Figure
}

// Partial reports whether only some of the cgroup's figures were read (a
// screen reads of most sandboxes only what its columns show): a nil
// figure then says nothing.
func (r *Resources) Partial() bool {
	return r.Asked != 0 && r.Asked&proc.AllFigures != proc.AllFigures
}

// Unread reports whether any of the figures f was left unread (Partial):
// unknown, not absent.
func (r *Resources) Unread(f proc.Figure) bool {
	return r.Partial() && r.Asked&f != f
}

// Pressure is the share of the last ten seconds in which some task of a
// cgroup waited for CPU, memory or IO, in percent; nil when unknown.
type Pressure struct {
	CPU, Memory, IO *float64
}

// Max returns the highest pressure known and the resource it is of
// ("" when none is known).
func (p Pressure) Max() (float64, string) {
	best, name := -1.0, ""
	for _, x := range []struct {
		v    *float64
		name string
	}{{p.CPU, "cpu"}, {p.Memory, "mem"}, {p.IO, "io"}} {
		if x.v != nil && *x.v > best {
			best, name = *x.v, x.name
		}
	}
	return max(best, 0), name
}

// Part is the CPU and memory of one side of a sandbox.
type Part struct {
	CPUSeconds  float64
	MemoryBytes uint64
	Processes   int
}

// Workload notes.
const (
	noteCgroup = "the processes in the sandbox's cgroup"
	noteGuest  = "the guest as the host sees it: the VMM process, vCPU threads and device emulation together"
	noteAll    = "every process but the runtime's own"
)

// resourcesOf works out a sandbox's figures from its members and cg, its
// dedicated cgroup's figures in snap (cgroupFigures); role says which
// members are the runtime's (see Watch.role).
func resourcesOf(sb *Sandbox, snap *proc.Snapshot, cg *proc.CgroupResources, role func(*Sandbox, *Member) role) Resources {
	var r Resources
	dedicated := sb.Cgroup != "" || sb.Freezer != ""
	var threadsWork, threadsOver uint64
	// inside is the runtime's processes that live in the dedicated
	// cgroup (a gofer beside its Sentry): the cgroup's figures count them
	// already.
	var inside Part
	var threadsInside uint64
	guest := false
	for _, m := range sb.Members {
		if m.Zombie() {
			continue
		}
		part, threads := &r.Workload, &threadsWork
		switch role(sb, m) {
		case roleRuntime:
			part, threads = &r.Overhead, &threadsOver
			if dedicated && inCgroup(sb, m) {
				inside.CPUSeconds += snap.CPUSeconds(m.Process)
				inside.MemoryBytes += m.RSS
				threadsInside += uint64(max(m.Threads, 1))
			}
		case roleGuest:
			guest = true
		}
		part.CPUSeconds += snap.CPUSeconds(m.Process)
		part.MemoryBytes += m.RSS
		part.Processes++
		*threads += uint64(max(m.Threads, 1))
	}
	r.Source, r.WorkloadNote = SourceProcesses, noteAll
	switch {
	case guest:
		r.WorkloadNote = noteGuest
	case dedicated:
		r.WorkloadNote = noteCgroup
	}
	if cg.Has(proc.HaveCPU | proc.HaveMemory) {
		r.Source = SourceCgroup
		r.Workload.CPUSeconds = max(float64(cg.CPUUsec)/1e6-inside.CPUSeconds, 0)
		r.Workload.MemoryBytes = cg.MemoryBytes - min(inside.MemoryBytes, cg.MemoryBytes)
	}
	r.CPUSeconds = r.Workload.CPUSeconds + r.Overhead.CPUSeconds
	r.MemoryBytes = r.Workload.MemoryBytes + r.Overhead.MemoryBytes
	r.PIDs = threadsWork + threadsOver
	if cg.Has(proc.HavePIDs) {
		r.PIDs = cg.PIDs + threadsOver - min(threadsInside, cg.PIDs)
	}
	if cg == nil {
		return r
	}
	r.Asked = cg.Asked
	opt := func(f proc.Figure, v uint64) *uint64 {
		if !cg.Has(f) {
			return nil
		}
		return &v
	}
	optf := func(f proc.Figure, v float64) *float64 {
		if !cg.Has(f) {
			return nil
		}
		return &v
	}
	r.MemoryPeakBytes = opt(proc.HaveMemoryPeak, cg.MemoryPeak)
	r.MemoryLimitBytes = opt(proc.HaveMemoryLimit, cg.MemoryLimit)
	r.CPULimitCores = optf(proc.HaveCPULimit, cg.CPULimitCores)
	r.PIDsLimit = opt(proc.HavePIDsLimit, cg.PIDsLimit)
	r.IOReadBytes = opt(proc.HaveIO, cg.IORead)
	r.IOWriteBytes = opt(proc.HaveIO, cg.IOWrite)
	r.OOMKills = opt(proc.HaveOOM, cg.OOMKills)
	r.Pressure = Pressure{
		CPU:    optf(proc.HavePressureCPU, cg.PressureCPU),
		Memory: optf(proc.HavePressureMemory, cg.PressureMemory),
		IO:     optf(proc.HavePressureIO, cg.PressureIO),
	}
	return r
}

// Resources returns the sandbox's figures as the view's Watch worked them
// out, or nil for a view no Watch has seen and for a sandbox with no
// process left.
func (v *View) Resources(sb *Sandbox) *Resources {
	if sb == nil || len(sb.Members) == 0 || len(v.resources) == 0 {
		return nil
	}
	i := int(sb.idx)
	if i >= len(v.Sandboxes) || v.Sandboxes[i] != sb {
		// A view built by hand (tests) has no positions in its sandboxes.
		i = slices.Index(v.Sandboxes, sb)
	}
	if i < 0 || i >= len(v.resources) {
		return nil
	}
	return v.resources[i]
}

// ResourceNeeds says which cgroup figures a front end shows: Figures of
// every sandbox, and every figure of the sandboxes whose keys are in Full
// (the one in the screen's detail pane). The zero value asks for every
// figure of every sandbox (JSON, serve, the reaper). The figures a Watch
// judges by (BadgeFigures) are read whatever it says.
type ResourceNeeds struct {
	Figures proc.Figure
	// Shown, when not nil, narrows Figures to the sandboxes whose keys it
	// holds (the rows on a screen and a page either side); the others get
	// the badges' figures only, and of those not in Open either no
	// process is shown (SettledCgroups).
	Shown map[string]bool
	// Open is the sandboxes whose processes are listed (expanded rows).
	Open map[string]bool
	Full map[string]bool
	// CPUOrder says the rows are in order of CPU use: every member's CPU
	// time must be of now (no stat carried, SettledAside).
	CPUOrder bool
	// Network asks for every sandbox's network namespaces and listeners
	// (`list --json`); the sandboxes in Full get theirs anyway.
	Network bool
	// Once says the view is judged once and then shown (list's table). A
	// cgroup figure makes a badge only by growing between two looks, and
	// a member is stuck only after a while in D, so once, the badges'
	// figures and the wait channels are not read: with Figures zero, no
	// cgroup file is.
	Once bool
}

// BadgeFigures are the figures Watch judges badges by: a ResourceNeeds
// that shows no figures asks for these.
const BadgeFigures = proc.HaveOOM

// ResourceWants lists what a proc.ResourceReader must read for a Watch to
// judge v and for a front end to show what n asks for: the dedicated
// cgroups of its sandboxes, each with the figures wanted, and their
// members in uninterruptible sleep.
func ResourceWants(v *View, n ResourceNeeds) (wants []proc.CgroupWant, dstate []int) {
	wants = make([]proc.CgroupWant, 0, len(v.Sandboxes))
	for _, sb := range v.Sandboxes {
		if sb.Cgroup != "" || sb.Freezer != "" {
			f := proc.AllFigures
			switch {
			case n.Full[sb.Key()]:
			case n.Once:
				f = n.Figures
			case n.Shown != nil && !n.Shown[sb.Key()]:
				f = BadgeFigures
			case n.Figures != 0:
				f = n.Figures | BadgeFigures
			}
			if f != 0 {
				wants = append(wants, proc.CgroupWant{Key: proc.CgroupKey{V2: sb.Cgroup, V1: sb.Freezer}, Figures: f})
			}
		}
		if n.Once {
			continue
		}
		for _, m := range sb.Members {
			if m.State == 'D' {
				dstate = append(dstate, m.PID)
			}
		}
	}
	return wants, dstate
}
