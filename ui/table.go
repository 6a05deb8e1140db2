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
	gutterW  = 2 // cursor mark, tag mark
	arrowW   = 2 // "▸ "
	minIDW   = model.MinShortID
	maxIDW   = 24
	runtimeW = 12
	countW   = 7
	cpuW     = 6
	memW     = 7
	ageW     = 9
	minRestW = 8
	nSeps    = 6
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
	t.idW = minIDW
	for i := range rows {
		if rows[i].kind == rowSandbox {
			t.idW = max(t.idW, min(len(rows[i].short), maxIDW))
		}
	}
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
	t.width, t.height = w, h
	t.clamp()
}

// view draws the column header and the visible rows, exactly height+1
// lines.
func (t *table) view(c *rowCtx) string {
	var b strings.Builder
	b.WriteString(t.styles.ColumnHeader.Render(t.header()))
	end := min(t.offset+t.height, len(t.rows))
	for i := t.offset; i < end; i++ {
		b.WriteByte('\n')
		b.WriteString(t.renderRow(&t.rows[i], i == t.cursor, c))
	}
	for i := end - t.offset; i < t.height; i++ {
		b.WriteByte('\n')
	}
	return b.String()
}

func (t *table) header() string {
	var b strings.Builder
	pad(&b, gutterW+arrowW)
	cell(&b, "ID/PID", t.idW, false)
	cell(&b, "RUNTIME/USER", runtimeW, false)
	cell(&b, "PROCS/S", countW, true)
	cell(&b, "CPU%", cpuW, true)
	cell(&b, "MEM", memW, true)
	cell(&b, "AGE/TIME+", ageW, true)
	b.WriteString("BADGES/COMMAND")
	return ansi.Truncate(b.String(), t.width, "")
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
	var pills []model.Badge
	var tail string
	switch r.kind {
	case rowSandbox, rowHost:
		arrow := "▸ "
		if r.open {
			arrow = "▾ "
		}
		b.WriteString(arrow)
		id, rt := format.Printable(r.short), format.Printable(r.runtime())
		if r.kind == rowHost {
			id, rt, style = "(host)", "-", t.styles.HostRow
			tail = "processes in no sandbox"
		} else {
			pills = r.sb.Badges
		}
		cell(&b, id, t.idW, false)
		cell(&b, rt, runtimeW, false)
		cell(&b, strconv.Itoa(r.st.procs), countW, true)
		cell(&b, percent(r.st.cpu, c.cpu), cpuW, true)
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
		cell(&b, string(rune(p.State)), countW, true)
		cell(&b, percent(c.cpu.of(p), c.cpu), cpuW, true)
		cell(&b, format.Bytes(p.RSS), memW, true)
		cell(&b, format.CPUTime(c.view.Snapshot.CPUSeconds(p)), ageW, true)
		b.WriteString(r.prefix)
		if r.m != nil && r.m.Orphan {
			pills = []model.Badge{model.BadgeOrphan}
		}
		tail = format.Printable(format.Command(p.Argv, p.Comm))
	}
	switch {
	case selected:
		style = t.styles.Selected
	case tagged:
		style = t.styles.Tagged
	}

	line := b.String()
	used := ansi.StringWidth(line)
	if used >= t.width {
		return style.Render(ansi.Truncate(line, t.width, ""))
	}
	var out strings.Builder
	out.WriteString(style.Render(line))
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
// pid, comm or argv contains q (lower case), or -1.
func (t *table) search(q string, start int) int {
	if q == "" || len(t.rows) == 0 {
		return -1
	}
	n := len(t.rows)
	for k := 0; k < n; k++ {
		i := (start + k) % n
		if rowMatches(&t.rows[i], q) {
			return i
		}
	}
	return -1
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
