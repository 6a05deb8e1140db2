package ui

import (
	"cmp"
	"slices"
	"strings"

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
	numSortKeys
)

func (k sortKey) String() string {
	return [...]string{"id", "cpu", "memory", "age", "processes"}[k]
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
	sort     sortKey
	tree     bool
	host     bool
	filter   query.Query
	expanded map[string]bool
}

// buildRows flattens the view into table rows: each sandbox that passes the
// filter, its members when expanded, and the host group last.
func buildRows(in rowsInput) []row {
	v := in.view
	if v == nil {
		return nil
	}
	short := v.ShortNames(model.MinShortID)

	type group struct {
		sb *model.Sandbox
		st stats
	}
	groups := make([]group, 0, len(v.Sandboxes))
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
		groups = append(groups, g)
		total++
		if in.expanded[sb.Key()] {
			total += len(sb.Members)
		}
	}
	slices.SortStableFunc(groups, func(a, b group) int {
		return cmp.Or(compareStats(in.sort, &a.st, &b.st), strings.Compare(a.sb.ID, b.sb.ID), strings.Compare(a.sb.Key(), b.sb.Key()))
	})

	rows := make([]row, 0, total+1)
	for i := range groups {
		g := &groups[i]
		open := in.expanded[g.sb.Key()]
		rows = append(rows, row{kind: rowSandbox, key: rowKey{sandbox: g.sb.Key()}, sb: g.sb, st: &g.st, short: short[g.sb], open: open})
		if !open {
			continue
		}
		members := g.sb.Members
		if !in.tree {
			members = slices.Clone(members)
			slices.SortStableFunc(members, func(a, b *model.Member) int {
				return compareProcs(in.sort, in.cpu, a.Process, b.Process)
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
	if in.host {
		rows = appendHost(rows, in)
	}
	return rows
}

func appendHost(rows []row, in rowsInput) []row {
	var procs []*proc.Process
	st := &stats{}
	for _, p := range in.view.Unattributed {
		if !in.filter.Empty() && !in.filter.Process(p) {
			continue
		}
		procs = append(procs, p)
		st.procs++
		st.cpu += in.cpu.of(p)
		st.rss += p.RSS
	}
	if len(procs) == 0 && !in.filter.Empty() {
		return rows
	}
	open := in.expanded[hostGroup]
	rows = append(rows, row{kind: rowHost, key: hostKey, st: st, open: open})
	if !open {
		return rows
	}
	if in.sort != sortID {
		slices.SortStableFunc(procs, func(a, b *proc.Process) int { return compareProcs(in.sort, in.cpu, a, b) })
	}
	for _, p := range procs {
		rows = append(rows, row{kind: rowHostProc, key: rowKey{sandbox: hostGroup, id: p.ID()}, p: p})
	}
	return rows
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
	}
	return 0
}

func compareProcs(k sortKey, c *cpuSampler, a, b *proc.Process) int {
	var d int
	switch k {
	case sortCPU:
		d = cmp.Compare(c.of(b), c.of(a))
	case sortMem:
		d = cmp.Compare(b.RSS, a.RSS)
	case sortAge:
		d = cmp.Compare(a.Start, b.Start)
	}
	return cmp.Or(d, cmp.Compare(a.PID, b.PID))
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
