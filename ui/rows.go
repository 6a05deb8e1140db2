package ui

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/ui/format"
)

// sortKey orders the sandboxes (and, outside tree view, their members).
type sortKey uint8

const (
	sortID sortKey = iota
	sortCPU
	sortMem
	sortAge
	sortProcs
	sortRuntime
	sortTrouble // orphans, then paused, then zombies on top
	sortIO
	sortPressure
	numSortKeys
)

func (k sortKey) String() string {
	return [...]string{"id", "cpu", "memory", "age", "processes", "runtime", "trouble", "io", "pressure"}[k]
}

type rowKind uint8

const (
	rowSandbox  rowKind = iota
	rowMember           // a process of a sandbox
	rowHost             // the group of processes in no sandbox
	rowHostProc         // a process in no sandbox
)

// rowKey is a row's identity across refreshes: selection, expansion and
// tags follow it, never the row index. A sandbox row is its ID; a process
// row is its sandbox and its (pid, start time).
type rowKey struct {
	sandbox string
	id      proc.Identity
}

// hostGroup names the host group; no rule can capture a NUL into an ID.
const hostGroup = "\x00host"

var hostKey = rowKey{sandbox: hostGroup}

func (k rowKey) isProcess() bool { return k.id.PID != 0 }

// stats are a group's figures, summed over its members.
type stats struct {
	procs int
	cpu   float64
	rss   uint64
	// start is the root's start (clock ticks after boot): the smallest
	// start is the oldest sandbox.
	start uint64
	// io is the sandbox's block IO in bytes a second, ioKnown when its
	// cgroup has the figures; pressure its highest pressure (some avg10,
	// percent) and pressureOf which resource that is ("" when unknown).
	io         float64
	ioKnown    bool
	pressure   float64
	pressureOf string
	// ioPending and pressurePending say a figure is coming: not read yet
	// (the row was off screen) or, for IO, read once and not yet twice;
	// rssPending that the members' memory counters were not read (the
	// sandbox was off screen and collapsed: proc.ScanHints).
	ioPending, pressurePending, rssPending bool
}

// row is one line of the table. Cells are formatted when the row is drawn,
// so building the rows costs nothing per cell and drawing costs only the
// visible window.
type row struct {
	kind  rowKind
	key   rowKey
	sb    *model.Sandbox // sandbox and member rows
	st    *stats         // sandbox and host rows
	p     *proc.Process  // member and host process rows
	m     *model.Member  // member rows
	short string         // sandbox rows: the short ID
	// prefix holds the tree glyphs in tree view.
	prefix string
	open   bool // sandbox and host rows: expanded
}

// rowsInput is everything the row list depends on; the list is rebuilt
// when any of it changes (a refresh, the filter, the sort, expansion).
type rowsInput struct {
	view     *model.View
	cpu      *cpuSampler
	io       *ioSampler
	sort     sortKey
	reverse  bool
	tree     bool
	host     bool
	filter   query.Query
	expanded map[string]bool
	// names keeps the short names between refreshes (nil: work them out).
	names *shortNames
}

// buildRows flattens the view into table rows: each sandbox that passes the
// filter and its members when expanded, and the host group, sorted with the
// rest (last when sorted by ID, which it has none of).
func buildRows(in rowsInput) []row {
	v := in.view
	if v == nil {
		return nil
	}
	short := in.names.of(v)

	groups := make([]group, 0, len(v.Sandboxes)+1)
	total := 0
	for _, sb := range v.Sandboxes {
		if !in.filter.Empty() && !in.filter.Sandbox(sb) {
			continue
		}
		g := group{sb: sb, st: stats{procs: len(sb.Members)}}
		if sb.Root != nil {
			g.st.start = sb.Root.Start
		}
		for _, m := range sb.Members {
			g.st.cpu += in.cpu.of(m.Process)
			g.st.rss += m.RSS
		}
		g.st.rssPending = v.Snapshot.Settled[sb.Cgroup]
		g.st.io, g.st.ioKnown = in.io.of(sb)
		g.st.ioPending = !g.st.ioKnown && in.io.sampled(sb)
		if r := v.Resources(sb); r != nil {
			g.st.pressure, g.st.pressureOf = r.Pressure.Max()
			g.st.ioPending = g.st.ioPending || r.Unread(proc.HaveIO)
			g.st.pressurePending = r.Unread(proc.HavePressureCPU | proc.HavePressureMemory | proc.HavePressureIO)
		}
		groups = append(groups, g)
		total++
		if in.expanded[sb.Key()] {
			total += len(sb.Members)
		}
	}
	if in.host {
		if g, ok := hostGroupOf(in); ok {
			groups = append(groups, g)
			total += 1 + len(g.procs)
		}
	}
	// The view lists its sandboxes in ID order already: a check is
	// cheaper than a sort of what is sorted. Pointers to the groups are
	// sorted, not the groups: a group is some hundred bytes, and a sort
	// of a thousand sandboxes moves its elements thousands of times.
	order := make([]*group, len(groups))
	for i := range groups {
		order[i] = &groups[i]
	}
	byKey := func(a, b *group) int { return compareGroups(in.sort, in.reverse, a, b) }
	if !slices.IsSortedFunc(order, byKey) {
		slices.SortStableFunc(order, byKey)
	}

	rows := make([]row, 0, total)
	for _, g := range order {
		if g.sb == nil {
			rows = appendHost(rows, in, g)
			continue
		}
		open := in.expanded[g.sb.Key()]
		rows = append(rows, row{kind: rowSandbox, key: rowKey{sandbox: g.sb.Key()}, sb: g.sb, st: &g.st, short: short[g.sb.Key()], open: open})
		if !open {
			continue
		}
		members := g.sb.Members
		if !in.tree {
			members = slices.Clone(members)
			slices.SortStableFunc(members, func(a, b *model.Member) int {
				return compareProcs(in.sort, in.reverse, in.cpu, a.Process, b.Process)
			})
		}
		for _, m := range members {
			r := row{kind: rowMember, key: rowKey{sandbox: g.sb.Key(), id: m.ID()}, sb: g.sb, p: m.Process, m: m}
			if in.tree {
				r.prefix = format.TreePrefix(m)
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// group is a sandbox, or (sb nil) the host group and its processes.
type group struct {
	sb    *model.Sandbox
	st    stats
	procs []*proc.Process
}

// hostGroupOf gathers the processes in no sandbox that pass the filter;
// false when a filter leaves none.
func hostGroupOf(in rowsInput) (group, bool) {
	g := group{}
	for _, p := range in.view.Unattributed {
		if !in.filter.Empty() && !in.filter.Process(p) {
			continue
		}
		g.procs = append(g.procs, p)
		g.st.procs++
		g.st.cpu += in.cpu.of(p)
		g.st.rss += p.RSS
	}
	return g, len(g.procs) > 0 || in.filter.Empty()
}

func appendHost(rows []row, in rowsInput, g *group) []row {
	open := in.expanded[hostGroup]
	rows = append(rows, row{kind: rowHost, key: hostKey, st: &g.st, open: open})
	if !open {
		return rows
	}
	procs := g.procs
	if in.tree {
		return appendHostTree(rows, procs)
	}
	if in.sort != sortID || in.reverse {
		procs = slices.Clone(procs)
		slices.SortStableFunc(procs, func(a, b *proc.Process) int { return compareProcs(in.sort, in.reverse, in.cpu, a, b) })
	}
	for _, p := range procs {
		rows = append(rows, row{kind: rowHostProc, key: rowKey{sandbox: hostGroup, id: p.ID()}, p: p})
	}
	return rows
}

// appendHostTree lists the host group's processes as trees, as a
// sandbox's: each under its parent when its parent is in the group, in
// pid order among siblings.
func appendHostTree(rows []row, procs []*proc.Process) []row {
	in := make(map[int]bool, len(procs))
	for _, p := range procs {
		in[p.PID] = true
	}
	kids := map[int][]*proc.Process{}
	var roots []*proc.Process
	for _, p := range procs {
		if in[p.PPID] && p.PPID != p.PID {
			kids[p.PPID] = append(kids[p.PPID], p)
		} else {
			roots = append(roots, p)
		}
	}
	// Pre-order, without recursion: a chain of processes is as deep as
	// the host has pids. lasts holds, for the node and its ancestors,
	// whether each is the last of its siblings.
	type node struct {
		p     *proc.Process
		depth int
		last  bool
	}
	var (
		stack []node
		lasts []bool
	)
	for i := len(roots) - 1; i >= 0; i-- {
		stack = append(stack, node{p: roots[i]})
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		lasts = lasts[:max(n.depth-1, 0)]
		if n.depth > 0 {
			lasts = append(lasts, n.last)
		}
		rows = append(rows, row{kind: rowHostProc, key: rowKey{sandbox: hostGroup, id: n.p.ID()}, p: n.p, prefix: format.TreeGlyphs(lasts)})
		ks := kids[n.p.PID]
		for i := len(ks) - 1; i >= 0; i-- {
			stack = append(stack, node{p: ks[i], depth: n.depth + 1, last: i == len(ks)-1})
		}
	}
	return rows
}

// compareGroups orders two groups by k (reversed on request); ties, and
// what the host group has nothing to compare by (an ID, a runtime), go by
// ID with the host group last.
func compareGroups(k sortKey, reverse bool, a, b *group) int {
	var d int
	switch {
	case a.sb != nil && b.sb != nil:
		switch k {
		case sortID:
			d = compareNames(a.sb, b.sb)
		case sortRuntime:
			d = strings.Compare(a.sb.Runtime, b.sb.Runtime)
		case sortTrouble:
			d = cmp.Compare(trouble(b.sb), trouble(a.sb))
		}
	case k == sortTrouble:
		d = cmp.Compare(trouble(b.sb), trouble(a.sb))
	}
	if d == 0 {
		d = compareStats(k, &a.st, &b.st)
	}
	if reverse {
		d = -d
	}
	if d != 0 {
		return d
	}
	switch {
	case a.sb == nil && b.sb == nil:
		return 0
	case a.sb == nil:
		return 1
	case b.sb == nil:
		return -1
	}
	return compareNames(a.sb, b.sb)
}

// compareNames orders sandboxes as a person reads their names: by
// namespace, then ID, ignoring case; the exact key breaks ties so that the
// order is total.
//
// It runs for every comparison of every sort by name, so nothing is
// lowered into a new string and nothing past the first difference is
// looked at.
func compareNames(a, b *model.Sandbox) int {
	if d := compareFolded(a.Namespace, b.Namespace); d != 0 {
		return d
	}
	if d := compareFolded(a.ID, b.ID); d != 0 {
		return d
	}
	return strings.Compare(a.Key(), b.Key())
}

// compareFolded orders a and b as strings.Compare orders their
// strings.ToLower: rune by rune, each lowered, a byte that is not UTF-8
// as the U+FFFD that ToLower writes for it. UTF-8 orders as its code
// points do, so comparing the runes compares the lowered strings' bytes.
func compareFolded(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if d := cmp.Compare(unicode.ToLower(ra), unicode.ToLower(rb)); d != 0 {
			return d
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// trouble ranks a sandbox for the trouble-first order: an OOM kill above
// a stuck process above a hollow runtime above an orphan above a paused
// one above one with zombies (nil, the host group, has none). Each badge
// outranks every combination of the ones below it.
func trouble(sb *model.Sandbox) int {
	if sb == nil {
		return 0
	}
	n := 0
	for i, b := range []model.Badge{model.BadgeOOM, model.BadgeStuck, model.BadgeHollow, model.BadgeOrphan, model.BadgePaused, model.BadgeZombie} {
		if sb.HasBadge(b) {
			n += 1 << (5 - i)
		}
	}
	return n
}

// compareStats orders groups: the biggest first, the oldest first.
func compareStats(k sortKey, a, b *stats) int {
	switch k {
	case sortCPU:
		return cmp.Compare(b.cpu, a.cpu)
	case sortMem:
		return cmp.Compare(b.rss, a.rss)
	case sortAge:
		return cmp.Compare(a.start, b.start)
	case sortProcs:
		return cmp.Compare(b.procs, a.procs)
	case sortIO:
		return cmp.Compare(b.io, a.io)
	case sortPressure:
		return cmp.Compare(b.pressure, a.pressure)
	}
	return 0
}

func compareProcs(k sortKey, reverse bool, c *cpuSampler, a, b *proc.Process) int {
	var d int
	switch k {
	case sortCPU:
		d = cmp.Compare(c.of(b), c.of(a))
	case sortMem:
		d = cmp.Compare(b.RSS, a.RSS)
	case sortAge:
		d = cmp.Compare(a.Start, b.Start)
	}
	d = cmp.Or(d, cmp.Compare(a.PID, b.PID))
	if reverse {
		return -d
	}
	return d
}

// find returns the index of the row with key k, or -1.
func find(rows []row, k rowKey) int {
	for i := range rows {
		if rows[i].key == k {
			return i
		}
	}
	return -1
}
