package ui

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/ui/format"
)

// Column widths. A sandbox row and a process row share the columns, so
// the numbers line up down the screen: ID/PID, RUNTIME/USER, PROCS/S, CPU%,
// MEM, AGE/TIME+, then BADGES/COMMAND takes the rest.
const (
	gutterW = 2 // cursor mark, tag mark
	arrowW  = 2 // "▸ "
	minIDW  = model.MinShortID
	// maxFullIDW bounds whole names (a namespace and a 64-character ID).
	maxFullIDW = 80
	runtimeW   = 12
	countW     = 7
	cpuW       = 6
	memW       = 7
	ageW       = 9
	// minRestW is the narrowest last column the screen is drawn with;
	// minCommandW the width a narrow window drops columns to keep for the
	// commands, as htop drops its less important columns first.
	minRestW    = 8
	minCommandW = 24
	nSeps       = 6
	ioW         = 8
	pressureW   = 9
)

// fixedW is the width of everything but the ID and the last column, every
// column shown.
const fixedW = gutterW + arrowW + runtimeW + countW + cpuW + memW + ageW + nSeps

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
	// cols are the columns that fit the width, restW the last one's
	// width.
	cols  []column
	restW int
	// longest is the widest command (tree glyphs included) of the listed
	// sandboxes, expanded or not; depth the deepest tree level among the
	// rows, indent the cells a level takes.
	longest, depth, indent int
	// widths is each listed sandbox's widest command, by the last rows.
	widths map[*model.Sandbox]int
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
	room := t.width - t.fixedWidth()
	over := 0
	for i := range t.rows {
		r := &t.rows[i]
		if r.p == nil || r.kind == rowSandbox || r.kind == rowHost {
			continue
		}
		w := ansi.StringWidth(format.CompressTree(r.prefix, t.indent)) + format.Width(format.Command(r.p))
		over = max(over, w-room)
	}
	return (over + hscrollStep - 1) / hscrollStep * hscrollStep
}

// measure finds what the column layout depends on in the rows: the
// longest command of the listed sandboxes and the deepest tree level.
//
// A sandbox's widest command is kept by its pointer: a refresh hands on
// the sandboxes none of whose members changed, so measuring costs only
// the changed ones, not every process's command at every refresh.
func (t *table) measure() {
	t.longest, t.depth = 0, 0
	widths := make(map[*model.Sandbox]int, len(t.widths))
	for i := range t.rows {
		r := &t.rows[i]
		switch r.kind {
		case rowSandbox:
			w, ok := t.widths[r.sb]
			if !ok {
				for _, mb := range r.sb.Members {
					w = max(w, 3*mb.Depth+format.Width(format.Command(mb.Process)))
				}
			}
			widths[r.sb] = w
			t.longest = max(t.longest, w)
		case rowMember, rowHostProc:
			t.depth = max(t.depth, utf8.RuneCountInString(r.prefix)/3)
		}
	}
	t.widths = widths
}

// scroll moves the commands by steps (negative: back to the left).
func (t *table) scroll(steps int) {
	t.hscroll = min(max(t.hscroll+steps*hscrollStep, 0), t.maxScroll())
}

// nearKeys are the keys of the sandboxes with a row on screen or within a
// page of it: those a scroll by a page shows at once. Nil, every
// sandbox, before the first rows.
func (t *table) nearKeys() map[string]bool {
	if len(t.rows) == 0 {
		return nil
	}
	h := max(t.height, 1)
	lo, hi := max(t.offset-h, 0), min(t.offset+2*h, len(t.rows))
	keys := make(map[string]bool, hi-lo)
	for i := lo; i < hi; i++ {
		if sb := t.rows[i].sb; sb != nil {
			keys[sb.Key()] = true
		}
	}
	return keys
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
	t.measure()
	t.layoutColumns()
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
		t.layoutColumns()
	}
	t.height = h
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
