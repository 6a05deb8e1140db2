package format

import "testing"

func TestUnreadable(t *testing.T) {
	defer func(v bool) { asRoot = v }(asRoot)
	for _, tc := range []struct {
		n    int
		root bool
		want string
	}{
		{1, false, "1 process partly unreadable: run as root"},
		{3, false, "3 processes partly unreadable: run as root"},
		{1, true, "1 process partly unreadable"},
	} {
		asRoot = tc.root
		if got := Unreadable(tc.n); got != tc.want {
			t.Errorf("Unreadable(%d) as root=%v = %q, want %q", tc.n, tc.root, got, tc.want)
		}
	}
}
