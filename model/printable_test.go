package model

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"ascii kept", "firecracker --api-sock /run/x", "firecracker --api-sock /run/x"},
		{"utf-8 kept", "café ├─", "café ├─"},
		{"osc title", "evil\x1b]2;INJECTED\x07", `evil\x1b]2;INJECTED\a`},
		{"sgr", "id\x1b[31mred", `id\x1b[31mred`},
		{"newline and tab", "a\nb\tc\rd", `a\nb\tc\rd`},
		{"C1 CSI", "a\u009bb", `a\u009bb`},
		{"C1 NEL", "a\u0085b", `a\u0085b`},
		{"bidi override", "txt.\u202eexe", `txt.\u202eexe`},
		{"bidi isolate", "a\u2066b\u2069", `a\u2066b\u2069`},
		{"zero width space", "a\u200bb", `a\u200bb`},
		{"line separator", "a\u2028b", `a\u2028b`},
		{"invalid utf-8", "a\xffb", `a\xffb`},
		{"invalid after utf-8", "é\xc3", `é\xc3`},
		{"replacement char kept", "a\ufffdb", "a\ufffdb"},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"NUL", "a\x00b", `a\x00b`},
		{"backslash kept", `C:\x1b`, `C:\x1b`},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Printable(tc.in)
			if got != tc.want {
				t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if IsPrintable(tc.in) != (got == tc.in) {
				t.Errorf("IsPrintable(%q) = %v, but Printable changes it: %v", tc.in, IsPrintable(tc.in), got != tc.in)
			}
		})
	}
}

// FuzzPrintable holds for any bytes: the result is valid UTF-8 with no
// character a terminal would act on, and a second pass changes nothing.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;x\x07", "\u202e", "\xff\xfe", "a\nb", "é\u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Printable(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Printable(%q) = %q: not UTF-8", s, got)
		}
		for _, r := range got {
			if Unsafe(r) {
				t.Fatalf("Printable(%q) = %q keeps %U", s, got, r)
			}
		}
		if Printable(got) != got {
			t.Fatalf("Printable is not idempotent on %q", s)
		}
		if IsPrintable(s) != (got == s) {
			t.Fatalf("IsPrintable(%q) disagrees with Printable", s)
		}
		if !strings.Contains(s, "\\") && len(got) < len(s) {
			t.Fatalf("Printable(%q) = %q lost bytes", s, got)
		}
	})
}
