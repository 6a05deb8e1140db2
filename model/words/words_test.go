package words

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n          int
		count, all string
	}{
		{0, "0 processes", "the 0 processes"},
		{1, "1 process", "the 1 process"},
		{2, "2 processes", "all 2 processes"},
	} {
		if got := Count(tc.n, "process", "processes"); got != tc.count {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.count)
		}
		if got := All(tc.n, "process", "processes"); got != tc.all {
			t.Errorf("All(%d) = %q, want %q", tc.n, got, tc.all)
		}
	}
}
