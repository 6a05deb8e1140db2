package ui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/ui/format"
)

// resources describes what a sandbox uses and may use, split into the
// runtime's overhead and the workload, and the evidence for its oom,
// stuck and hollow badges.
func (d detail) resources(sb *model.Sandbox, c *rowCtx, add func(k, v string)) {
	r := c.view.Resources(sb)
	if r == nil {
		return
	}
	if r.Partial() {
		// The screen read only its columns' figures of this sandbox; the
		// next refresh reads all of them for the pane.
		add("resources", "at the next refresh")
	} else {
		d.figures(r, add)
	}
	t := sb.Trouble
	if t == nil {
		return
	}
	for _, e := range t.OOM {
		add("oom", e.Time.Local().Format(timeLayout)+": "+e.Detail)
	}
	for _, e := range t.Stuck {
		wchan := e.Wchan
		if wchan == "" {
			wchan = "unknown"
		}
		add("stuck", fmt.Sprintf("pid %d %s in D for %s, waiting in %s", e.PID, e.Comm, format.Age(c.view.Time.Sub(e.Since)), wchan))
	}
	if t.Hollow != "" {
		add("hollow", t.Hollow)
	}
}

// figures is the resources block: use, limits, IO, pressure, and the
// split between overhead and workload.
func (d detail) figures(r *model.Resources, add func(k, v string)) {
	use := fmt.Sprintf("cpu %s, memory %s", format.CPUTime(r.CPUSeconds), format.Bytes(r.MemoryBytes))
	if r.MemoryPeakBytes != nil {
		use += " (peak " + format.Bytes(*r.MemoryPeakBytes) + ")"
	}
	use += fmt.Sprintf(", %d tasks; workload from its %s", r.PIDs, r.Source)
	add("resources", use)
	add("limits", limitsText(r))
	if r.IOReadBytes != nil {
		add("io", fmt.Sprintf("read %s, written %s", format.Bytes(*r.IOReadBytes), format.Bytes(*r.IOWriteBytes)))
	}
	if p := pressureText(r.Pressure); p != "" {
		add("pressure", p)
	}
	add("overhead", partText(r.Overhead)+": the runtime's own processes")
	add("workload", partText(r.Workload)+": "+r.WorkloadNote)
}

// limitsText lists the limits set and flags the missing memory limit: a
// sandbox with none can take the host's memory.
func limitsText(r *model.Resources) string {
	var parts []string
	if r.MemoryLimitBytes != nil {
		parts = append(parts, "memory "+format.Bytes(*r.MemoryLimitBytes))
	} else {
		parts = append(parts, "NO MEMORY LIMIT")
	}
	if r.CPULimitCores != nil {
		parts = append(parts, "cpu "+strconv.FormatFloat(*r.CPULimitCores, 'f', -1, 64)+" cores")
	}
	if r.PIDsLimit != nil {
		parts = append(parts, "pids "+strconv.FormatUint(*r.PIDsLimit, 10))
	}
	return strings.Join(parts, ", ")
}

// pressureText is the some-avg10 pressures known, "" when none is.
func pressureText(p model.Pressure) string {
	var parts []string
	for _, x := range []struct {
		name string
		v    *float64
	}{{"cpu", p.CPU}, {"memory", p.Memory}, {"io", p.IO}} {
		if x.v != nil {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", x.name, *x.v))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ") + " (waiting, last 10 s)"
}

func partText(p model.Part) string {
	return fmt.Sprintf("cpu %s, memory %s in %s", format.CPUTime(p.CPUSeconds), format.Bytes(p.MemoryBytes), format.Count(p.Processes, "process", "processes"))
}
