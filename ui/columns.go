package ui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/ui/format"
)

// colID names a column; renderRow draws each by it.
type colID uint8

const (
	colName colID = iota // ID/PID
	colRuntime
	colCount
	colCPU
	colMem
	colAge
	colIO
	colPressure
	colLast // BADGES/COMMAND
)

// column is one column of the table: its title, width, alignment, the sort
// order a click on its title picks, and its rank among the columns a
// narrow window leaves out.
type column struct {
	id    colID
	title string
	w     int
	right bool
	sort  sortKey
	// drop is the order columns leave a window too narrow for them and a
	// usable command: 1 goes first, 0 never goes. A column added later
	// takes a rank here and needs nothing else to make room.
	drop int
	// room, when set, is the width the last column must keep for this
	// column to be shown at all: a column shown only when there is room.
	room int
}

// allColumns are the table's columns left to right, each at full width;
// the last takes the rest of the line. IO and PRESSURE, the sandbox
// cgroup's figures, are shown only when there is room: they leave a
// narrow window first, then MEM, AGE and CPU in that order, as htop ranks
// them; the ID, the runtime and the counts never go.
func allColumns(idW int) []column {
	return []column{
		{colName, "ID/PID", idW, false, sortID, 0, 0},
		{colRuntime, "RUNTIME/USER", runtimeW, false, sortRuntime, 0, 0},
		{colCount, "PROCS/S", countW, true, sortProcs, 0, 0},
		{colCPU, "CPU%", cpuW, true, sortCPU, 5, 0},
		{colMem, "MEM", memW, true, sortMem, 3, 0},
		{colAge, "AGE/TIME+", ageW, true, sortAge, 4, 0},
		{colIO, "IO", ioW, true, sortIO, 2, roomyRest},
		{colPressure, "PRESSURE", pressureW, true, sortPressure, 1, roomyRest},
		{colLast, "BADGES/COMMAND", 0, false, sortTrouble, 0, 0},
	}
}

// candidates are allColumns with the sorted column kept the longest: a
// column shown only when there is room shows while the rows are in its
// order, so the order is never one the screen does not show.
func (t *table) candidates(idW int) []column {
	cols := allColumns(idW)
	for i := range cols {
		if c := &cols[i]; c.sort == t.sort && c.room > 0 {
			c.room, c.drop = 0, len(cols)
		}
	}
	return cols
}

// roomyRest is what the last column keeps besides the columns shown only
// when there is room.
const roomyRest = 48

// fitColumns keeps the columns that leave the last one at least want
// cells (and each column's room) in width w, dropping by rank; it
// returns them and that last width.
func fitColumns(cols []column, w, want int) ([]column, int) {
	rest := func() int {
		n := w - gutterW - arrowW
		for _, c := range cols {
			if c.w > 0 {
				n -= c.w + 1
			}
		}
		return n
	}
	for {
		n := rest()
		worst := -1
		for i, c := range cols {
			if c.drop > 0 && (n < want || c.room > n) && (worst < 0 || c.drop < cols[worst].drop) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		cols = append(cols[:worst:worst], cols[worst+1:]...)
	}
	return cols, rest()
}

// fixedWidth is the width of every column before the last, separators and
// the gutter included.
func (t *table) fixedWidth() int {
	n := gutterW + arrowW
	for _, c := range t.cols {
		if c.w > 0 {
			n += c.w + 1
		}
	}
	return n
}

// layoutColumns sizes the ID column and picks the columns that fit. The
// commands get the width first: whole names (namespace/ID) fill the ID
// column only when every command of the listed sandboxes still fits
// beside them, and a short name is never cut below the prefix that tells
// it from the others (ShortNames makes it unique).
func (t *table) layoutColumns() {
	short, full := minIDW, minIDW
	for i := range t.rows {
		if r := &t.rows[i]; r.kind == rowSandbox {
			short = max(short, format.Width(r.short))
			full = max(full, min(format.Width(r.sb.Name()), maxFullIDW))
		}
	}
	// A deep tree keeps a cell a level besides a command of minTailW.
	want := max(minCommandW, t.depth+minTailW)
	t.fullIDs = false
	t.cols, t.restW = fitColumns(t.candidates(short), t.width, want)
	if cols, rest := fitColumns(t.candidates(full), t.width, want); len(cols) == len(allColumns(0)) && rest >= max(t.longest, wideRest) {
		t.cols, t.restW, t.fullIDs = cols, rest, true
	}
	t.idW = t.cols[0].w
	t.indent = treeIndent(t.depth, t.restW)
}

// minTailW is the least of a command a deep tree row keeps beside its
// glyphs.
const minTailW = 16

// wideRest is the room the last column keeps at the least before the IDs
// are shown whole.
const wideRest = 80

// treeIndent is the width of one tree level: three cells, as htop draws
// them, compressed to two and then one when the deepest process would
// leave its command less than half the last column.
func treeIndent(depth, rest int) int {
	for _, w := range []int{3, 2} {
		if depth*w <= rest/2 {
			return w
		}
	}
	return 1
}

func (t *table) header() string {
	var b strings.Builder
	pad(&b, gutterW+arrowW)
	for _, c := range t.cols {
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

// columnAt is the column under screen column x of the header line.
func (t *table) columnAt(x int) (column, bool) {
	at := gutterW + arrowW
	for _, c := range t.cols {
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
