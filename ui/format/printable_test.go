package format

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestWidth: the ASCII shortcut counts what the grapheme parse of the
// escaped text counts, for text a process controls of every kind.
func TestWidth(t *testing.T) {
	for _, s := range []string{
		"", "sleep 1000", "ns/0123abcd", "~!@#$%^&*()_+{}|:\"<>?`-=[];',./",
		"tab\there", "bell\a", "\x1b[31mred\x1b[0m", "del\x7f", "\xff\xfe", "naïve", "日本語", "e\u0301", "🙂 ok",
		"\u202eevil", "line\u2028sep",
	} {
		if got, want := Width(s), ansi.StringWidth(Printable(s)); got != want {
			t.Errorf("Width(%q) = %d, want %d", s, got, want)
		}
	}
}
