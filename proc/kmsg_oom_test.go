package proc

import "testing"

// RawComm decodes the kernel log's escapes, so a hostile comm compares
// with what /proc gave.
func TestOOMKillRawComm(t *testing.T) {
	for in, want := range map[string]string{
		"python3":            "python3",
		`a\x1bb`:             "a\x1bb",
		`\x5cx41`:            `\x41`,
		`bad\xzz`:            `bad\xzz`,
		`end\x4`:             `end\x4`,
		`\xe2\x80\xae` + "x": "\u202ex",
	} {
		if got := (OOMKill{Comm: in}).RawComm(); got != want {
			t.Errorf("RawComm(%q) = %q, want %q", in, got, want)
		}
	}
}
