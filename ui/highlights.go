package ui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/sandtop/sandtop/ui/theme"
)

// highlights are the cells of a row drawn in a colour of their own (a
// process's state, a high CPU%), by htop's conventions.
type highlights struct {
	theme *theme.Theme
	spans []span
}

type span struct {
	from, to int // byte offsets in the row's text
	style    lipgloss.Style
}

func (h *highlights) add(from, to int, st lipgloss.Style) {
	h.spans = append(h.spans, span{from, to, st})
}

// cpu writes the CPU% cell, coloured when the use is high.
func (h *highlights) cpu(b *strings.Builder, pct float64, c *cpuSampler) {
	from := b.Len()
	cell(b, percent(pct, c), cpuW, true)
	if st, ok := h.theme.CPU(pct); ok && c.known() {
		h.add(from, b.Len(), st)
	}
}

// render draws line in style, its highlighted cells in theirs.
func (h *highlights) render(line string, style lipgloss.Style) string {
	if len(h.spans) == 0 {
		return style.Render(line)
	}
	var out strings.Builder
	at := 0
	for _, sp := range h.spans {
		if sp.from > at {
			out.WriteString(style.Render(line[at:sp.from]))
		}
		out.WriteString(sp.style.Render(line[sp.from:sp.to]))
		at = sp.to
	}
	if at < len(line) {
		out.WriteString(style.Render(line[at:]))
	}
	return out.String()
}
