package ui

import (
	"slices"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/x/ansi"
)

// footer draws a one-line key help in width cells. Its last keep bindings
// always show (? more keys and q quit on the main screen, what a newcomer
// needs most): when the line is too wide the others leave from the end of
// the list, so each list names its less important keys last.
func footer(h help.Model, b []key.Binding, keep, width int) string {
	b = slices.DeleteFunc(slices.Clone(b), func(k key.Binding) bool { return !k.Enabled() })
	keep = min(keep, len(b))
	h.Width = 0 // measured here, never cut with an ellipsis
	for {
		v := h.ShortHelpView(b)
		if ansi.StringWidth(v) <= width || len(b) == keep {
			return ansi.Truncate(v, width, "")
		}
		b = slices.Delete(b, len(b)-keep-1, len(b)-keep)
	}
}
