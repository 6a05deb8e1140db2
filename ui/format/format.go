// Package format turns numbers into the short human forms shown in tables:
// sizes, ages and CPU times. The CLI and the TUI share it so that both show
// the same figures the same way.
package format

import (
	"fmt"
	"strings"
	"time"

	"github.com/sandtop/sandtop/model/words"
)

// Bytes renders a size with a binary unit: 512B, 12.3K, 4.0M, 1.2G.
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	v := float64(n) / unit
	for _, u := range "KMGTP" {
		if v < unit || u == 'P' {
			if v < 10 {
				return fmt.Sprintf("%.1f%c", v, u)
			}
			return fmt.Sprintf("%.0f%c", v, u)
		}
		v /= unit
	}
	panic("unreachable")
}

// Duration spells a duration without trailing zero units: "1s", "250ms",
// "10m", "1h" rather than "10m0s" or "1h0m0s".
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Age renders a duration in its two largest units: 45s, 3m12s, 2h05m, 4d03h.
func Age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	default:
		return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
	}
}

// CPUTime renders CPU seconds as htop does: m:ss.cc below an hour, h:mm:ss above.
func CPUTime(sec float64) string {
	if sec < 0 {
		sec = 0
	}
	if sec < 3600 {
		m := int(sec) / 60
		return fmt.Sprintf("%d:%05.2f", m, sec-float64(m*60))
	}
	s := int64(sec)
	return fmt.Sprintf("%dh%02d:%02d", s/3600, s%3600/60, s%60)
}

// Count spells n things: "1 process", "3 processes", "0 processes". It
// is words.Count, the one helper every count goes through, under the name
// the screen and the commands call it by.
func Count(n int, one, many string) string { return words.Count(n, one, many) }
