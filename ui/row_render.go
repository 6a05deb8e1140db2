package ui

import (
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/ui/format"
)

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
	group := r.kind == rowSandbox || r.kind == rowHost
	switch {
	case group:
		arrow := "▸ "
		if r.open {
			arrow = "▾ "
		}
		b.WriteString(arrow)
		if r.kind == rowHost {
			style = t.styles.HostRow
			tail = "processes in no sandbox"
		} else {
			pills = r.sb.Badges
			// A leftover sandbox has no process to show: the row says
			// what it left, by kind.
			tail = model.LeftoverSummary(r.sb.Leftovers)
		}
	default:
		style = t.styles.ProcRow
		if r.kind == rowHostProc || r.p.Zombie() {
			style = t.styles.FaintRow
		}
		b.WriteString("  ")
		if r.m != nil && r.m.Escaped {
			pills = []model.Badge{model.MarkEscaped}
		}
		tail = format.Printable(format.Command(r.p))
		if t.hscroll > 0 {
			tail = ansi.TruncateLeft(tail, t.hscroll, "…")
		}
	}
	for _, col := range t.cols {
		if col.w == 0 {
			break
		}
		if group {
			t.groupCell(&b, &hl, col, r, c)
		} else {
			t.processCell(&b, &hl, col, r, c)
		}
	}
	if !group {
		b.WriteString(format.CompressTree(r.prefix, t.indent))
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
		pill := t.styles.Badge(bd) + style.Render(" ")
		pw := len(bd) + 3 // pill plus the space after it
		if bd == model.BadgeZombie && r.sb != nil && r.kind == rowSandbox {
			// How many, as the header counts sandboxes.
			n := strconv.Itoa(r.sb.Zombies) + " "
			pill += style.Render(n)
			pw += len(n)
		}
		if used+pw > t.width {
			break
		}
		out.WriteString(pill)
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

// groupCell writes a sandbox's (or the host group's) cell of a column.
func (t *table) groupCell(b *strings.Builder, hl *highlights, col column, r *row, c *rowCtx) {
	switch col.id {
	case colName:
		id := "(host)"
		if r.kind == rowSandbox {
			id = r.short
			if t.fullIDs {
				id = r.sb.Name()
			}
			id = format.Printable(id)
		}
		cell(b, id, col.w, false)
	case colRuntime:
		rt := "-"
		if r.kind == rowSandbox {
			rt = format.Printable(r.runtime())
		}
		cell(b, rt, col.w, false)
	case colCount:
		cell(b, strconv.Itoa(r.st.procs), col.w, true)
	case colCPU:
		hl.cpu(b, r.st.cpu, c.cpu)
	case colMem:
		mem := format.Bytes(r.st.rss)
		if r.st.rssPending {
			mem = pending
		}
		cell(b, mem, col.w, true)
	case colAge:
		cell(b, r.age(c.view), col.w, true)
	case colIO:
		cell(b, r.io(), col.w, true)
	case colPressure:
		cell(b, r.pressure(), col.w, true)
	}
}

// processCell writes a process's cell of a column.
func (t *table) processCell(b *strings.Builder, hl *highlights, col column, r *row, c *rowCtx) {
	p := r.p
	switch col.id {
	case colName:
		cell(b, strconv.Itoa(p.PID), col.w, false)
	case colRuntime:
		cell(b, userName(c.users, p.UID), col.w, false)
	case colCount:
		from := b.Len()
		cell(b, string(rune(p.State)), col.w, true)
		if st, ok := t.styles.State(p.State); ok {
			hl.add(from, b.Len(), st)
		}
	case colCPU:
		hl.cpu(b, c.cpu.of(p), c.cpu)
	case colMem:
		mem := format.Bytes(p.RSS)
		if c.view.Snapshot.Settled[p.Cgroup] || c.view.Snapshot.IsCarried(p) {
			mem = pending
		}
		cell(b, mem, col.w, true)
	case colAge:
		cell(b, format.CPUTime(c.view.Snapshot.CPUSeconds(p)), col.w, true)
	case colIO, colPressure:
		cell(b, "", col.w, true) // a cgroup's figures: the sandbox row has them
	}
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
