package ui

import (
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
	"github.com/sandtop/sandtop/ui/format"
)

// Column widths. A sandbox row and a process row share the columns, so
// the numbers line up down the screen: ID/PID, RUNTIME/USER, PROCS/S, CPU%,
// MEM, AGE/TIME+, then BADGES/COMMAND takes the rest.
const (
	gutterW = 2 // cursor mark, tag mark
	arrowW  = 2 // "▸ "
	minIDW  = model.MinShortID
	maxIDW  = 24
	// maxFullIDW bounds whole names (a namespace and a 64-character ID).
	maxFullIDW = 80
	runtimeW   = 12
	countW     = 7
	cpuW       = 6
	memW       = 7
	ageW       = 9
	minRestW   = 8
	nSeps      = 6
)

// fixedW is the width of everything but the ID and the last column.
const fixedW = gutterW + arrowW + runtimeW + countW + cpuW + memW + ageW + nSeps

// rowCtx is what drawing a row needs besides the row.
type rowCtx struct {
	view  *model.View
	cpu   *cpuSampler
	users map[int]string
	tags  map[rowKey]bool
	// grace is the strategy a teardown would start with (the detail pane
	// says what one would do).
	grace time.Duration
}

// table is the main list. It keeps the flattened rows and draws only the
// window [offset, offset+height): the cost of View does not depend on how
// many rows there are (bubbles table's UpdateViewport does the same).
type table struct {
	styles *Styles
	rows   []row
	cursor int
	offset int
	// height is the number of row lines, the column header excluded.
	height int
	width  int
	idW    int
	// fullIDs shows whole names in the ID column (a wide terminal).
	fullIDs bool
	// sort and reverse are the order the rows are in, for the header's
	// arrow.
	sort    sortKey
	reverse bool
	// hscroll is how many columns of every process's command are scrolled
	// out on the left (< and >), for argv longer than the window.
	hscroll int
}

// hscrollStep is how far one press of < or > moves the commands.
const hscrollStep = 8

// maxScroll is the furthest the commands can scroll: until the longest
// one's end is in the window; 0 when every command fits.
func (t *table) maxScroll() int {
	room := t.width - fixedW - t.idW
	over := 0
	for i := range t.rows {
		r := &t.rows[i]
		if r.p == nil || r.kind == rowSandbox || r.kind == rowHost {
			continue
		}
		w := ansi.StringWidth(r.prefix) + ansi.StringWidth(format.Printable(format.Command(r.p.Argv, r.p.Comm)))
		over = max(over, w-room)
	}
	return (over + hscrollStep - 1) / hscrollStep * hscrollStep
}

// scroll moves the commands by steps (negative: back to the left).
func (t *table) scroll(steps int) {
	t.hscroll = min(max(t.hscroll+steps*hscrollStep, 0), t.maxScroll())
}

func (t *table) selected() *row {
	if t.cursor < 0 || t.cursor >= len(t.rows) {
		return nil
	}
	return &t.rows[t.cursor]
}

// setRows replaces the rows after a refresh, a filter, a sort or an
// expansion. The cursor follows the identity it was on, never the index:
// the same row if it is still there, else the same process anywhere,
// else its sandbox, else the nearest index. The selected line keeps its
// place on the screen where it can.
func (t *table) setRows(rows []row, keep rowKey, had bool) {
	screen := t.cursor - t.offset
	old := t.cursor
	t.rows = rows
	t.sizeID()
	i := -1
	if had {
		i = find(rows, keep)
		if i < 0 && keep.isProcess() {
			for j := range rows {
				if rows[j].key.id == keep.id {
					i = j
					break
				}
			}
			if i < 0 {
				i = find(rows, rowKey{sandbox: keep.sandbox})
			}
		}
	}
	if i < 0 {
		i = min(old, len(rows)-1)
	}
	t.cursor = max(i, 0)
	t.offset = t.cursor - screen
	t.clamp()
}

// clamp keeps the cursor in range and on screen.
func (t *table) clamp() {
	n := len(t.rows)
	t.cursor = max(0, min(t.cursor, n-1))
	h := max(t.height, 1)
	t.offset = max(0, min(t.offset, n-h))
	if t.cursor < t.offset {
		t.offset = t.cursor
	}
	if t.cursor >= t.offset+h {
		t.offset = t.cursor - h + 1
	}
	// The first line shows the sticky sandbox header, not its own row:
	// keep the cursor's row below it.
	for t.cursor == t.offset && t.offset > 0 && t.groupAbove(t.offset) >= 0 {
		t.offset--
	}
}

// groupAbove is the index of the sandbox (or host) row of the process row
// i when that row is above i, else -1.
func (t *table) groupAbove(i int) int {
	r := &t.rows[i]
	if r.kind != rowMember && r.kind != rowHostProc {
		return -1
	}
	for g := i - 1; g >= 0; g-- {
		if k := t.rows[g].kind; k == rowSandbox || k == rowHost {
			return g
		}
	}
	return -1
}

func (t *table) move(d int) {
	t.cursor += d
	t.clamp()
}

func (t *table) top()      { t.cursor = 0; t.clamp() }
func (t *table) bottom()   { t.cursor = len(t.rows) - 1; t.clamp() }
func (t *table) pageUp()   { t.move(-max(t.height-1, 1)) }
func (t *table) pageDown() { t.move(max(t.height-1, 1)) }

func (t *table) setSize(w, h int) {
	if w != t.width {
		t.width = w
		t.sizeID()
	}
	t.height = h
	t.clamp()
}

// wideRest is the room the last column must keep for the IDs to be shown
// whole instead of shortened.
const wideRest = 80

// sizeID sizes the ID column: the short names, or on a terminal wide
// enough the whole names (namespace/ID), so that a wide window uses its
// room.
func (t *table) sizeID() {
	short, full := minIDW, minIDW
	for i := range t.rows {
		if r := &t.rows[i]; r.kind == rowSandbox {
			short = max(short, min(len(r.short), maxIDW))
			full = max(full, min(len(r.sb.Name()), maxFullIDW))
		}
	}
	t.idW, t.fullIDs = short, false
	if t.width-fixedW-full >= wideRest {
		t.idW, t.fullIDs = full, true
	}
}

// view draws the column header and the visible rows, exactly height+1
// lines.
func (t *table) view(c *rowCtx) string {
	var b strings.Builder
	b.WriteString(t.styles.ColumnHeader.Render(t.header()))
	end := min(t.offset+t.height, len(t.rows))
	for i := t.offset; i < end; i++ {
		b.WriteByte('\n')
		r := &t.rows[i]
		if i == t.offset {
			// Sticky header: the first line of a window that starts
			// inside a sandbox's processes names that sandbox.
			if g := t.groupAbove(i); g >= 0 {
				r = &t.rows[g]
			}
		}
		b.WriteString(t.renderRow(r, i == t.cursor, c))
	}
	for i := end - t.offset; i < t.height; i++ {
		b.WriteByte('\n')
	}
	return b.String()
}

// column is one column of the table: its title, width, alignment and the
// sort order a click on its title picks.
type column struct {
	title string
	w     int
	right bool
	sort  sortKey
}

// columns are the table's columns left to right; the last, BADGES/COMMAND,
// takes the rest of the line (w 0).
func (t *table) columns() []column {
	return []column{
		{"ID/PID", t.idW, false, sortID},
		{"RUNTIME/USER", runtimeW, false, sortRuntime},
		{"PROCS/S", countW, true, sortProcs},
		{"CPU%", cpuW, true, sortCPU},
		{"MEM", memW, true, sortMem},
		{"AGE/TIME+", ageW, true, sortAge},
		{"BADGES/COMMAND", 0, false, sortTrouble},
	}
}

// sortArrow shows the sorted column's direction: the natural order of
// IDs and runtimes is ascending, of every figure (and of trouble) the
// biggest first; I reverses it.
func sortArrow(k sortKey, reverse bool) string {
	up := k == sortID || k == sortRuntime
	if up != reverse {
		return "▲"
	}
	return "▼"
}

func (t *table) header() string {
	var b strings.Builder
	pad(&b, gutterW+arrowW)
	for _, c := range t.columns() {
		title := c.title
		if c.sort == t.sort && c.w > 0 && ansi.StringWidth(title)+1 > c.w {
			// No room for the arrow: the sandbox half of the title.
			title, _, _ = strings.Cut(title, "/")
		}
		if c.sort == t.sort {
			if c.right {
				title = sortArrow(t.sort, t.reverse) + title
			} else {
				title += sortArrow(t.sort, t.reverse)
			}
		}
		if c.w == 0 {
			b.WriteString(title)
			break
		}
		cell(&b, title, c.w, c.right)
	}
	return ansi.Truncate(b.String(), t.width, "")
}

// columnAt is the column under screen column x of the header line.
func (t *table) columnAt(x int) (column, bool) {
	at := gutterW + arrowW
	for _, c := range t.columns() {
		if c.w == 0 {
			return c, x >= at
		}
		if x >= at && x < at+c.w+1 {
			return c, true
		}
		at += c.w + 1
	}
	return column{}, false
}

// renderRow draws one row: fixed columns as text in the row's style, then
// the badges (pills keep their own colors) or the command.
func (t *table) renderRow(r *row, selected bool, c *rowCtx) string {
	var b strings.Builder
	b.Grow(t.width)
	tagged := c.tags[r.key]
	b.WriteByte(mark(selected, '>'))
	b.WriteByte(mark(tagged, '*'))

	style := t.styles.Row
	hl := highlights{theme: t.styles.Theme}
	var pills []model.Badge
	var tail string
	switch r.kind {
	case rowSandbox, rowHost:
		arrow := "▸ "
		if r.open {
			arrow = "▾ "
		}
		b.WriteString(arrow)
		name := r.short
		if t.fullIDs && r.sb != nil {
			name = r.sb.Name()
		}
		id, rt := format.Printable(name), format.Printable(r.runtime())
		if r.kind == rowHost {
			id, rt, style = "(host)", "-", t.styles.HostRow
			tail = "processes in no sandbox"
		} else {
			pills = r.sb.Badges
		}
		cell(&b, id, t.idW, false)
		cell(&b, rt, runtimeW, false)
		cell(&b, strconv.Itoa(r.st.procs), countW, true)
		hl.cpu(&b, r.st.cpu, c.cpu)
		cell(&b, format.Bytes(r.st.rss), memW, true)
		cell(&b, r.age(c.view), ageW, true)
	default:
		p := r.p
		style = t.styles.ProcRow
		if r.kind == rowHostProc || p.Zombie() {
			style = t.styles.FaintRow
		}
		b.WriteString("  ")
		cell(&b, strconv.Itoa(p.PID), t.idW, false)
		cell(&b, userName(c.users, p.UID), runtimeW, false)
		from := b.Len()
		cell(&b, string(rune(p.State)), countW, true)
		if st, ok := t.styles.State(p.State); ok {
			hl.add(from, b.Len(), st)
		}
		hl.cpu(&b, c.cpu.of(p), c.cpu)
		cell(&b, format.Bytes(p.RSS), memW, true)
		cell(&b, format.CPUTime(c.view.Snapshot.CPUSeconds(p)), ageW, true)
		b.WriteString(r.prefix)
		if r.m != nil && r.m.Orphan {
			pills = []model.Badge{model.BadgeOrphan}
		}
		tail = format.Printable(format.Command(p.Argv, p.Comm))
		if t.hscroll > 0 {
			tail = ansi.TruncateLeft(tail, t.hscroll, "…")
		}
	}
	switch {
	case selected:
		style = t.styles.Selected
	case tagged:
		style = t.styles.Tagged
	}

	line := b.String()
	used := ansi.StringWidth(line)
	if selected || tagged {
		hl.spans = nil // the selection bar and the tag colour win, as in htop
	}
	if used >= t.width {
		return ansi.Truncate(hl.render(line, style), t.width, "")
	}
	var out strings.Builder
	out.WriteString(hl.render(line, style))
	for _, bd := range pills {
		pw := len(bd) + 3 // pill plus the space after it
		if used+pw > t.width {
			break
		}
		out.WriteString(t.styles.Badge(bd))
		out.WriteString(style.Render(" "))
		used += pw
	}
	rest := t.width - used
	if tail != "" && rest > 0 {
		tail = ansi.Truncate(tail, rest, "…")
		out.WriteString(style.Render(tail))
		rest -= ansi.StringWidth(tail)
	}
	if selected && rest > 0 {
		out.WriteString(style.Render(strings.Repeat(" ", rest)))
	}
	return out.String()
}

func (r *row) runtime() string {
	if r.sb == nil {
		return ""
	}
	return r.sb.Runtime
}

func (r *row) age(v *model.View) string {
	if r.kind != rowSandbox {
		return ""
	}
	return format.Age(v.Age(r.sb))
}

func mark(on bool, c byte) byte {
	if on {
		return c
	}
	return ' '
}

// cell writes s into a column of width w and the separator after it,
// truncating with an ellipsis and aligning numbers right.
func cell(b *strings.Builder, s string, w int, right bool) {
	n := ansi.StringWidth(s)
	if n > w {
		s = ansi.Truncate(s, w, "…")
		n = ansi.StringWidth(s)
	}
	if right {
		pad(b, w-n)
		b.WriteString(s)
	} else {
		b.WriteString(s)
		pad(b, w-n)
	}
	b.WriteByte(' ')
}

const spaces = "                                                                "

func pad(b *strings.Builder, n int) {
	for n > 0 {
		k := min(n, len(spaces))
		b.WriteString(spaces[:k])
		n -= k
	}
}

func percent(v float64, c *cpuSampler) string {
	if !c.known() {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func userName(users map[int]string, uid int) string {
	if uid < 0 {
		return "?"
	}
	if n, ok := users[uid]; ok {
		return format.Printable(n)
	}
	return strconv.Itoa(uid)
}

// search returns the first row from start on (wrapping) whose ID, runtime,
// pid, comm or argv contains q (lower case), or -1. A collapsed sandbox
// whose own row does not match is looked into: when one of its members
// matches, search returns the sandbox's row and that member.
func (t *table) search(q string, start int) (int, *model.Member) {
	if q == "" || len(t.rows) == 0 {
		return -1, nil
	}
	n := len(t.rows)
	for k := 0; k < n; k++ {
		i := (start + k) % n
		r := &t.rows[i]
		if rowMatches(r, q) {
			return i, nil
		}
		if r.kind == rowSandbox && !r.open {
			for _, mb := range r.sb.Members {
				if strconv.Itoa(mb.PID) == q || query.MatchProcess(mb.Process, q) {
					return i, mb
				}
			}
		}
	}
	return -1, nil
}

func rowMatches(r *row, q string) bool {
	switch r.kind {
	case rowSandbox:
		return containsFold(r.sb.ID, q) || containsFold(r.sb.Runtime, q)
	case rowHost:
		return containsFold("(host)", q)
	}
	return strconv.Itoa(r.p.PID) == q || query.MatchProcess(r.p, q)
}

// containsFold is a case-insensitive substring test; sub is lower case.
func containsFold(s, sub string) bool {
	return len(sub) <= len(s) && strings.Contains(strings.ToLower(s), sub)
}
