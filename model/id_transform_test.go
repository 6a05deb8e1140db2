package model

import "testing"

// The kernel log escapes an OOM victim's comm as \xNN: decoded, a hostile
// comm compares with what /proc gave.
func TestUnescapeHexKernelLogComm(t *testing.T) {
	for in, want := range map[string]string{
		"python3":            "python3",
		`a\x1bb`:             "a\x1bb",
		`\x5cx41`:            `\x41`,
		`bad\xzz`:            `bad\xzz`,
		`end\x4`:             `end\x4`,
		`\xe2\x80\xae` + "x": "\u202ex",
	} {
		if got := unescapeHex(in); got != want {
			t.Errorf("unescapeHex(%q) = %q, want %q", in, got, want)
		}
	}
}
