package model

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable makes text a process controls safe to put before a person:
// argv, comm, cwd, paths and the IDs captured from them are whatever a
// sandboxed process chose. An ESC in them would be obeyed by the terminal
// (a title set, colours, a cursor moved), a newline would forge a second
// row, a bidi override would make the text read backwards, and bytes that
// are not UTF-8 would garble the line. Every human-readable output of
// sandtop, on the screen and on the command line, passes such text
// through here; JSON output does not (its encoder escapes them and keeps
// the bytes).
//
// Each such character is shown escaped, as Go would quote it: C0 controls
// and DEL as \n, \t, \a or \x1b, C1 controls, line and paragraph
// separators and format characters (the bidi overrides and isolates,
// zero-width marks) as \u202e, and a byte that is not UTF-8 as \xff.
// Everything else is kept, so a clean string comes back unchanged and
// applying Printable twice changes nothing more than applying it once.
func Printable(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case Unsafe(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Unsafe reports whether a terminal would act on r rather than show it:
// control characters (C0, DEL, C1), line and paragraph separators, and
// format characters (Cf: the bidi embeddings, overrides and isolates,
// zero-width joiners and marks, the soft hyphen).
func Unsafe(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// IsPrintable reports whether Printable leaves s as it is.
func IsPrintable(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || Unsafe(r) {
			return false
		}
		i += size
	}
	return true
}
