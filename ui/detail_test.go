package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestWrapValue: a long command line wraps within the width, never leaves
// a flag's leading hyphens at the end of a line, and may still break a
// hyphenated word inside.
func TestWrapValue(t *testing.T) {
	for _, tt := range []struct {
		v string
		w int
	}{
		{"containerd-shim-cube-rs -namespace default -id 19d0c2d464a9ad7d97b50358eaeb2c19753af03fa5d7c4b4e4dc9614eb7ab157 -address /tmp/sandsim-3090997045/run/cubelet.sock", 57},
		{"qemu-system-x86_64 --enable-kvm -m 512 --drive file=/var/lib/vms/a-very-long-name.img", 10},
		{"a‑b already holds a non-breaking hyphen -x", 12},
	} {
		lines := wrapValue(tt.v, tt.w)
		for i, l := range lines {
			if ansi.StringWidth(l) > tt.w {
				t.Errorf("%q at %d: line %q is wider", tt.v, tt.w, l)
			}
			trimmed := strings.TrimRight(l, " ")
			if i < len(lines)-1 && (trimmed == "-" || strings.HasSuffix(trimmed, " -") || strings.HasSuffix(trimmed, " --")) {
				t.Errorf("%q at %d: line %q ends in a flag's hyphens", tt.v, tt.w, l)
			}
		}
		if got := strings.Join(strings.Fields(strings.Join(lines, " ")), " "); strings.ReplaceAll(got, " ", "") != strings.ReplaceAll(tt.v, " ", "") {
			t.Errorf("%q at %d: wrapped into %q", tt.v, tt.w, lines)
		}
	}
	if lines := wrapValue("containerd-shim-cube-rs", 12); len(lines) < 2 || !strings.HasSuffix(lines[0], "-") {
		t.Errorf("a hyphenated word no longer breaks inside: %q", lines)
	}
}
