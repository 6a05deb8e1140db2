package format

import (
	"testing"
	"time"
)

func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{{0, "0B"}, {1023, "1023B"}, {1024, "1.0K"}, {12_900, "13K"}, {5 << 20, "5.0M"}, {3 << 30, "3.0G"}, {1 << 62, "4096P"}} {
		if got := Bytes(tc.n); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestAge(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{-time.Second, "0s"}, {45 * time.Second, "45s"}, {192 * time.Second, "3m12s"}, {2*time.Hour + 5*time.Minute, "2h05m"}, {99 * time.Hour, "4d03h"}} {
		if got := Age(tc.d); got != tc.want {
			t.Errorf("Age(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestCPUTime(t *testing.T) {
	for _, tc := range []struct {
		s    float64
		want string
	}{{0, "0:00.00"}, {1.5, "0:01.50"}, {75.25, "1:15.25"}, {3725, "1h02:05"}} {
		if got := CPUTime(tc.s); got != tc.want {
			t.Errorf("CPUTime(%v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
