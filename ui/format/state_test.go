package format

import "testing"

func TestState(t *testing.T) {
	for in, want := range map[byte]string{'R': "running", 'S': "sleeping", 'Z': "zombie", 'T': "stopped", '?': "unknown"} {
		if got := State(in); got != want {
			t.Errorf("State(%q) = %q, want %q", in, got, want)
		}
	}
}
