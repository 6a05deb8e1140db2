package exporter

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// sandboxLabels name one sandbox: its ID alone is not unique (two
// containerd namespaces can each hold a container "web", two runtimes can
// pick the same ID), so every per-sandbox series carries all three, and no
// two sandboxes can ever collide in one scrape.
var sandboxLabels = []string{"id", "runtime", "namespace"}

// The metrics derived from a view. Names, types and labels are part of
// sandtop's interface (docs/serve.md): add, never rename.
var (
	descSandboxes = prometheus.NewDesc("sandtop_sandboxes",
		"Sandboxes on this host.", []string{"runtime"}, nil)
	descBadged = prometheus.NewDesc("sandtop_sandboxes_badged",
		"Sandboxes carrying a badge (orphan, zombie, paused, leftover, oom, stuck, hollow); 0 where none.", []string{"runtime", "badge"}, nil)
	descProcesses = prometheus.NewDesc("sandtop_sandbox_processes",
		"Processes in sandboxes.", []string{"runtime"}, nil)
	descZombies = prometheus.NewDesc("sandtop_zombie_processes",
		"Zombie processes in sandboxes.", []string{"runtime"}, nil)
	descUnattributed = prometheus.NewDesc("sandtop_unattributed_processes",
		"User-space processes in no sandbox.", nil, nil)
	descUnreadable = prometheus.NewDesc("sandtop_partly_unreadable_processes",
		"Processes some of whose fields could not be read (not root: run serve as root).", nil, nil)
	descOldestOrphan = prometheus.NewDesc("sandtop_oldest_orphan_start_time_seconds",
		"Start time of the oldest orphaned sandbox's root process, Unix seconds; absent while the runtime has no orphan.", []string{"runtime"}, nil)
	descBadgedSince = prometheus.NewDesc("sandtop_badged_since_timestamp_seconds",
		"When the sandbox of this runtime that has carried the badge longest was first seen with it (the first scan that saw it), Unix seconds; absent while none carries it. The badge may be older, back to sandtop_badged_since_earliest_timestamp_seconds.", []string{"runtime", "badge"}, nil)
	descBadgedEarliest = prometheus.NewDesc("sandtop_badged_since_earliest_timestamp_seconds",
		"The earliest any sandbox of this runtime can have got the badge: the last scan that saw it without the badge, or its start when serve never saw it without (it had the badge when serve started), Unix seconds; absent while none carries it, or when a sandbox with no process left was never seen without it.", []string{"runtime", "badge"}, nil)
	descLastScan = prometheus.NewDesc("sandtop_last_scan_timestamp_seconds",
		"When the last successful scan read the host, Unix seconds.", nil, nil)

	descInfo = prometheus.NewDesc("sandtop_sandbox_info",
		"Always 1, one per sandbox (with --per-sandbox).", sandboxLabels, nil)
	descBadge = prometheus.NewDesc("sandtop_sandbox_badge",
		"1 for each badge a sandbox carries (with --per-sandbox).", append(sandboxLabels, "badge"), nil)
	descBadgeSince = prometheus.NewDesc("sandtop_sandbox_badge_since_timestamp_seconds",
		"When the sandbox was first seen with the badge, Unix seconds (with --per-sandbox).", append(sandboxLabels, "badge"), nil)
	descBadgeEarliest = prometheus.NewDesc("sandtop_sandbox_badge_since_earliest_timestamp_seconds",
		"The earliest the sandbox can have got the badge, Unix seconds; absent when unknown (with --per-sandbox).", append(sandboxLabels, "badge"), nil)
	descCPU = prometheus.NewDesc("sandtop_sandbox_cpu_seconds_total",
		"CPU time of the sandbox's processes, user and system, including members that exited while sandtop watched (with --per-sandbox).", sandboxLabels, nil)
	descRSS = prometheus.NewDesc("sandtop_sandbox_rss_bytes",
		"Resident memory of the sandbox's processes (with --per-sandbox).", sandboxLabels, nil)
	descMemory = prometheus.NewDesc("sandtop_sandbox_memory_bytes",
		"Memory of the sandbox: its cgroup's memory (page cache included) where it has the figure, else its processes' resident memory, plus the runtime's processes outside it (with --per-sandbox).", sandboxLabels, nil)
	descMemoryLimit = prometheus.NewDesc("sandtop_sandbox_memory_limit_bytes",
		"Memory limit of the sandbox's cgroup; absent when it has none (with --per-sandbox).", sandboxLabels, nil)
	descCPULimit = prometheus.NewDesc("sandtop_sandbox_cpu_limit_cores",
		"CPU limit of the sandbox's cgroup, in cores; absent when it has none (with --per-sandbox).", sandboxLabels, nil)
	descPIDs = prometheus.NewDesc("sandtop_sandbox_pids",
		"Tasks (threads included) in the sandbox (with --per-sandbox).", sandboxLabels, nil)
	descPIDsLimit = prometheus.NewDesc("sandtop_sandbox_pids_limit",
		"Task limit of the sandbox's cgroup; absent when it has none (with --per-sandbox).", sandboxLabels, nil)
	descIORead = prometheus.NewDesc("sandtop_sandbox_io_read_bytes_total",
		"Block IO bytes read by the sandbox's cgroup; absent when it has no IO figures (with --per-sandbox).", sandboxLabels, nil)
	descIOWrite = prometheus.NewDesc("sandtop_sandbox_io_write_bytes_total",
		"Block IO bytes written by the sandbox's cgroup; absent when it has no IO figures (with --per-sandbox).", sandboxLabels, nil)
	descOOMKills = prometheus.NewDesc("sandtop_sandbox_oom_kills_total",
		"OOM kills in the sandbox's cgroup over its life; absent when it has no memory figures (with --per-sandbox).", sandboxLabels, nil)
	descPressure = prometheus.NewDesc("sandtop_sandbox_pressure_ratio",
		"Share of the last 10 s in which some task of the sandbox's cgroup waited for the resource (PSI some avg10); absent when unknown (with --per-sandbox).", append(sandboxLabels, "resource"), nil)
	descPartCPU = prometheus.NewDesc("sandtop_sandbox_part_cpu_seconds",
		"CPU time of the sandbox split into the runtime's overhead and the workload (for a VM, the guest as the host sees it) (with --per-sandbox).", append(sandboxLabels, "part"), nil)
	descPartMemory = prometheus.NewDesc("sandtop_sandbox_part_memory_bytes",
		"Memory of the sandbox split into the runtime's overhead and the workload (with --per-sandbox).", append(sandboxLabels, "part"), nil)
	descRuntimeMemory = prometheus.NewDesc("sandtop_runtime_memory_bytes",
		"Memory of a runtime's sandboxes, split into the runtime's overhead and the workload.", []string{"runtime", "part"}, nil)
	descNoMemoryLimit = prometheus.NewDesc("sandtop_sandboxes_without_memory_limit",
		"Sandboxes with processes whose cgroup sets no memory limit (or that have no cgroup).", []string{"runtime"}, nil)
	descUnderPressure = prometheus.NewDesc("sandtop_sandboxes_under_pressure",
		"Sandboxes whose cgroup's PSI some avg10 for the resource is at least 10%.", []string{"runtime", "resource"}, nil)
	descOmitted = prometheus.NewDesc("sandtop_per_sandbox_omitted",
		"Sandboxes left out of the per-sandbox series by --per-sandbox-limit (with --per-sandbox).", nil, nil)
)

// summary is what a scrape reports, computed once per scan so that a
// scrape costs a walk over at most a few thousand numbers.
type summary struct {
	runtimes     []string
	byRuntime    map[string]*runtimeCounts
	unattributed int
	unreadable   int
	lastScan     float64
	perSandbox   []sandboxSample
	omitted      int
}

type runtimeCounts struct {
	sandboxes, processes, zombies int
	badged                        []int // indexed like model.Badges: every badge present for every runtime
	// memory is by part, [0] overhead and [1] workload.
	memory        [2]uint64
	noMemoryLimit int
	// pressured counts the sandboxes under pressure, by resource (cpu,
	// memory, io).
	pressured [3]int
	// oldestOrphan is a Unix time; 0 while the runtime has no orphan.
	oldestOrphan float64
	// since and earliest, indexed like model.Badges, are the windows of
	// the badges (badgeSince): the latest first sighting and the earliest
	// possible start over the sandboxes that carry the badge; 0 while
	// none does, earliest also 0 when one sandbox's is unknown.
	since, earliest []float64
}

type sandboxSample struct {
	key, id, runtime, namespace string
	badges                      []model.Badge
	// windows are the badges' windows, in the order of badges.
	windows []badgeWindow
	cpu     float64
	rss     uint64
	res     *model.Resources
}

// parts and pressures name the label values of the split and pressure
// series, in the order runtimeCounts keeps them.
var (
	parts     = [2]string{"overhead", "workload"}
	pressures = [3]string{"cpu", "memory", "io"}
)

// pressureThreshold is the PSI some avg10, in percent, from which a
// sandbox counts as under pressure.
const pressureThreshold = 10

func summarize(v *model.View, o Options, cpu cpuTotals, windows map[badgeKey]badgeWindow) *summary {
	s := &summary{
		byRuntime:    map[string]*runtimeCounts{},
		unattributed: len(v.Unattributed),
		unreadable:   v.Snapshot.PartlyUnreadable,
		lastScan:     float64(v.Time.UnixNano()) / 1e9,
	}
	counts := func(rt string) *runtimeCounts {
		c := s.byRuntime[rt]
		if c == nil {
			n := len(model.Badges)
			c = &runtimeCounts{badged: make([]int, n), since: make([]float64, n), earliest: make([]float64, n)}
			s.byRuntime[rt] = c
			s.runtimes = append(s.runtimes, rt)
		}
		return c
	}
	for _, rt := range o.Runtimes {
		counts(rt)
	}
	for _, sb := range v.Sandboxes {
		c := counts(sb.Runtime)
		c.sandboxes++
		c.processes += len(sb.Members)
		c.zombies += sb.Zombies
		for i, b := range model.Badges {
			w, ok := windows[badgeKey{sb.Key(), b}]
			if !ok {
				continue
			}
			if c.badged[i] == 0 || w.since < c.since[i] {
				c.since[i] = w.since
			}
			if c.badged[i] == 0 || c.earliest[i] != 0 && (w.earliest == 0 || w.earliest < c.earliest[i]) {
				c.earliest[i] = w.earliest
			}
			c.badged[i]++
		}
		if r := v.Resources(sb); r != nil {
			c.memory[0] += r.Overhead.MemoryBytes
			c.memory[1] += r.Workload.MemoryBytes
			if r.MemoryLimitBytes == nil {
				c.noMemoryLimit++
			}
			for i, p := range []*float64{r.Pressure.CPU, r.Pressure.Memory, r.Pressure.IO} {
				if p != nil && *p >= pressureThreshold {
					c.pressured[i]++
				}
			}
		}
		if sb.Orphan {
			start := float64(v.Snapshot.StartTime(sb.Root.Process).Unix())
			if c.oldestOrphan == 0 || start < c.oldestOrphan {
				c.oldestOrphan = start
			}
		}
	}
	slices.Sort(s.runtimes)
	if o.PerSandbox {
		s.perSandbox, s.omitted = perSandbox(v, o.PerSandboxLimit, cpu, windows)
	}
	return s
}

// perSandbox samples at most limit sandboxes: the troubled ones (any
// badge) first, then the rest, each part in ID order, so the same
// sandboxes keep their series from one scan to the next.
func perSandbox(v *model.View, limit int, cpu cpuTotals, windows map[badgeKey]badgeWindow) ([]sandboxSample, int) {
	picked := make([]*model.Sandbox, 0, min(limit, len(v.Sandboxes)))
	for _, troubled := range []bool{true, false} {
		for _, sb := range v.Sandboxes {
			if len(picked) == limit {
				break
			}
			if (len(sb.Badges) > 0) == troubled {
				picked = append(picked, sb)
			}
		}
	}
	out := make([]sandboxSample, 0, len(picked))
	seen := make(map[[3]string]bool, len(picked))
	for _, sb := range picked {
		// Label values must be UTF-8, and should show a terminal (curl
		// of /metrics) nothing it would act on: a process's own ID may
		// hold anything, so they are escaped as every text output is.
		// Two IDs alike once escaped would be one series twice, which
		// fails the whole scrape: the second is left out.
		smp := sandboxSample{key: sb.Key(), id: model.Printable(sb.ID), runtime: model.Printable(sb.Runtime), namespace: model.Printable(sb.Namespace),
			badges: sb.Badges, res: v.Resources(sb)}
		labels := [3]string{smp.id, smp.runtime, smp.namespace}
		if seen[labels] {
			continue
		}
		seen[labels] = true
		for _, b := range sb.Badges {
			smp.windows = append(smp.windows, windows[badgeKey{sb.Key(), b}])
		}
		for _, m := range sb.Members {
			smp.rss += m.RSS
		}
		smp.cpu = cpu.add(v, sb)
		out = append(out, smp)
	}
	cpu.keep(out)
	return out, len(v.Sandboxes) - len(out)
}

// cpuTotals keeps each exported sandbox's CPU counter monotonic: a member
// that exits takes its CPU time out of the sum of the live members, so the
// counter adds what each member gained since the last scan instead of
// summing the live members again. A sandbox that leaves the exported set
// starts again from its live sum when it returns, which Prometheus reads
// as a new series.
type cpuTotals map[string]*cpuTotal

type cpuTotal struct {
	total   float64
	members map[proc.Identity]float64
}

// add returns sb's counter after this view.
func (c cpuTotals) add(v *model.View, sb *model.Sandbox) float64 {
	t := c[sb.Key()]
	if t == nil {
		t = &cpuTotal{}
		c[sb.Key()] = t
	}
	members := make(map[proc.Identity]float64, len(sb.Members))
	for _, m := range sb.Members {
		now := v.Snapshot.CPUSeconds(m.Process)
		members[m.ID()] = now
		if before, ok := t.members[m.ID()]; ok && now >= before {
			t.total += now - before
		} else {
			t.total += now
		}
	}
	t.members = members
	return t.total
}

// keep forgets every sandbox not in out.
func (c cpuTotals) keep(out []sandboxSample) {
	in := make(map[string]bool, len(out))
	for _, s := range out {
		in[s.key] = true
	}
	for id := range c {
		if !in[id] {
			delete(c, id)
		}
	}
}

// viewCollector exposes the exporter's last good view. Its series are made
// afresh at each scrape from the last summary, so a sandbox that is gone
// loses its series at once instead of leaving them stale.
type viewCollector Exporter

func (c *viewCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSandboxes, descBadged, descProcesses, descZombies,
		descUnattributed, descUnreadable, descOldestOrphan, descBadgedSince, descBadgedEarliest, descLastScan,
		descRuntimeMemory, descNoMemoryLimit, descUnderPressure} {
		ch <- d
	}
	if c.opts.PerSandbox {
		for _, d := range []*prometheus.Desc{descInfo, descBadge, descBadgeSince, descBadgeEarliest, descCPU, descRSS, descOmitted,
			descMemory, descMemoryLimit, descCPULimit, descPIDs, descPIDsLimit, descIORead, descIOWrite,
			descOOMKills, descPressure, descPartCPU, descPartMemory} {
			ch <- d
		}
	}
}

func (c *viewCollector) Collect(ch chan<- prometheus.Metric) {
	_, s, _, _ := (*Exporter)(c).last()
	if s == nil {
		return // no good scan yet: unknown, so no value (never a 0)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, rt := range s.runtimes {
		n := s.byRuntime[rt]
		gauge(descSandboxes, float64(n.sandboxes), rt)
		for i, b := range model.Badges {
			gauge(descBadged, float64(n.badged[i]), rt, string(b))
			if n.badged[i] > 0 {
				gauge(descBadgedSince, n.since[i], rt, string(b))
				if n.earliest[i] != 0 {
					gauge(descBadgedEarliest, n.earliest[i], rt, string(b))
				}
			}
		}
		gauge(descProcesses, float64(n.processes), rt)
		gauge(descZombies, float64(n.zombies), rt)
		if n.oldestOrphan != 0 {
			gauge(descOldestOrphan, n.oldestOrphan, rt)
		}
		for i, part := range parts {
			gauge(descRuntimeMemory, float64(n.memory[i]), rt, part)
		}
		gauge(descNoMemoryLimit, float64(n.noMemoryLimit), rt)
		for i, res := range pressures {
			gauge(descUnderPressure, float64(n.pressured[i]), rt, res)
		}
	}
	gauge(descUnattributed, float64(s.unattributed))
	gauge(descUnreadable, float64(s.unreadable))
	gauge(descLastScan, s.lastScan)
	if !c.opts.PerSandbox {
		return
	}
	for _, sb := range s.perSandbox {
		gauge(descInfo, 1, sb.id, sb.runtime, sb.namespace)
		for i, b := range sb.badges {
			gauge(descBadge, 1, sb.id, sb.runtime, sb.namespace, string(b))
			gauge(descBadgeSince, sb.windows[i].since, sb.id, sb.runtime, sb.namespace, string(b))
			if sb.windows[i].earliest != 0 {
				gauge(descBadgeEarliest, sb.windows[i].earliest, sb.id, sb.runtime, sb.namespace, string(b))
			}
		}
		ch <- prometheus.MustNewConstMetric(descCPU, prometheus.CounterValue, sb.cpu, sb.id, sb.runtime, sb.namespace)
		gauge(descRSS, float64(sb.rss), sb.id, sb.runtime, sb.namespace)
		if sb.res != nil {
			resourceSeries(ch, sb)
		}
	}
	gauge(descOmitted, float64(s.omitted))
}

// resourceSeries sends one sandbox's resource series; a figure its cgroup
// does not have, or a limit it does not set, has no series.
func resourceSeries(ch chan<- prometheus.Metric, sb sandboxSample) {
	r, labels := sb.res, []string{sb.id, sb.runtime, sb.namespace}
	send := func(d *prometheus.Desc, t prometheus.ValueType, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, append(labels[:3:3], extra...)...)
	}
	opt := func(d *prometheus.Desc, t prometheus.ValueType, v *uint64) {
		if v != nil {
			send(d, t, float64(*v))
		}
	}
	send(descMemory, prometheus.GaugeValue, float64(r.MemoryBytes))
	opt(descMemoryLimit, prometheus.GaugeValue, r.MemoryLimitBytes)
	if r.CPULimitCores != nil {
		send(descCPULimit, prometheus.GaugeValue, *r.CPULimitCores)
	}
	send(descPIDs, prometheus.GaugeValue, float64(r.PIDs))
	opt(descPIDsLimit, prometheus.GaugeValue, r.PIDsLimit)
	opt(descIORead, prometheus.CounterValue, r.IOReadBytes)
	opt(descIOWrite, prometheus.CounterValue, r.IOWriteBytes)
	opt(descOOMKills, prometheus.CounterValue, r.OOMKills)
	for i, p := range []*float64{r.Pressure.CPU, r.Pressure.Memory, r.Pressure.IO} {
		if p != nil {
			send(descPressure, prometheus.GaugeValue, *p/100, pressures[i])
		}
	}
	for i, part := range []model.Part{r.Overhead, r.Workload} {
		send(descPartCPU, prometheus.GaugeValue, part.CPUSeconds, parts[i])
		send(descPartMemory, prometheus.GaugeValue, float64(part.MemoryBytes), parts[i])
	}
}
