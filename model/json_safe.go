package model

import (
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// JSONSafe wraps the writer of a JSON output. encoding/json escapes the C0
// controls in a string but writes DEL, the C1 controls and the bidi and
// other format characters as they are, and a terminal showing `sandtop
// list --json` would obey them (a C1 CSI is an ESC [). JSONSafe writes
// each such character as a \uXXXX escape, which decodes to the same string:
// the JSON loses nothing. Outside strings JSON holds only ASCII, so no
// escape can land anywhere but inside a string.
func JSONSafe(w io.Writer) io.Writer { return &jsonSafeWriter{w: w} }

type jsonSafeWriter struct {
	w io.Writer
	// carry holds the start of a UTF-8 sequence that a write cut short.
	carry []byte
	buf   []byte
}

func (j *jsonSafeWriter) Write(b []byte) (int, error) {
	n := len(b)
	if len(j.carry) == 0 && asciiOnly(b) {
		_, err := j.w.Write(b)
		return n, err
	}
	if len(j.carry) > 0 {
		b = append(j.carry, b...)
		j.carry = nil
	}
	out := j.buf[:0]
	for i := 0; i < len(b); {
		if b[i] == 0x7f {
			out = append(out, `\u007f`...)
			i++
			continue
		}
		if b[i] < utf8.RuneSelf {
			out = append(out, b[i])
			i++
			continue
		}
		if !utf8.FullRune(b[i:]) {
			j.carry = append([]byte(nil), b[i:]...)
			break
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && Unsafe(r) {
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	j.buf = out
	_, err := j.w.Write(out)
	return n, err
}

func asciiOnly(b []byte) bool {
	for _, c := range b {
		if c >= 0x7f {
			return false
		}
	}
	return true
}
