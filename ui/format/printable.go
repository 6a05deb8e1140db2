package format

import (
	"github.com/charmbracelet/x/ansi"
	"github.com/sandtop/sandtop/model"
)

// Printable is model.Printable, the one escaping of text a process
// controls, under the name the screen's code calls it by.
func Printable(s string) string { return model.Printable(s) }

// Width is how many cells s takes on screen once escaped (Printable).
// Text of printable ASCII, which nearly every name and command is, takes
// one cell a byte: it is counted without the grapheme parse, which a
// refresh would otherwise run over every sandbox's name.
func Width(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return ansi.StringWidth(Printable(s))
		}
	}
	return len(s)
}
