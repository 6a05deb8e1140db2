package format

import "testing"

func TestPrintable(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"ascii kept", "firecracker --api-sock /run/x", "firecracker --api-sock /run/x"},
		{"utf-8 kept", "café ├─", "café ├─"},
		{"escape neutralised", "evil\x1b]0;pwned\x07", "evil?]0;pwned?"},
		{"newline and tab", "a\nb\tc", "a?b?c"},
		{"C1 control", "a\u009bb", "a?b"},
		{"invalid utf-8", "a\xffb", "a\ufffdb"},
		{"DEL", "a\x7fb", "a?b"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Printable(tc.in); got != tc.want {
				t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestState(t *testing.T) {
	for in, want := range map[byte]string{'R': "running", 'S': "sleeping", 'Z': "zombie", 'T': "stopped", '?': "unknown"} {
		if got := State(in); got != want {
			t.Errorf("State(%q) = %q, want %q", in, got, want)
		}
	}
}
