package format

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable makes text from /proc safe to put on a terminal. argv, comm,
// paths and IDs captured from them are whatever a process chose: an ESC
// in them would be obeyed by the terminal (console-escape injection), and
// bytes that are not UTF-8 would garble the line. Control characters
// become '?' and invalid bytes become U+FFFD; everything else is kept.
func Printable(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
		case unicode.IsControl(r), r == '\u2028', r == '\u2029':
			b.WriteByte('?')
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
