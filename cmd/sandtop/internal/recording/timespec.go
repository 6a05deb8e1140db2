package recording

import (
	"fmt"
	"strings"
	"time"
)

// TimeForms describes what ParseTime accepts, for help texts and errors.
const TimeForms = `03:12 or 03:12:30 (local time), 2026-11-23 03:12:30 (local), ` +
	`RFC 3339 (2026-11-23T03:12:30Z), +90s (after the recording's start), -5m (before its end)`

// ParseTime reads a moment of a recording that runs from first to last:
//
//	03:12, 03:12:30          a time of day in loc, on the recording's day
//	2026-11-23 03:12[:30]    a date and time in loc
//	RFC 3339                 2026-11-23T03:12:30Z, with any zone
//	+90s, +1h5m              that long after first
//	-5m                      that long before last
//
// A time of day is looked for on every day the recording spans, earliest
// first. A time given to the minute or the second stands for that whole
// minute or second: "03:12" in a recording that starts at 03:12:20 is its
// start. The result is not checked against the range: Reader.At does that.
func ParseTime(s string, first, last time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("no time given: use %s", TimeForms)
	}
	if s[0] == '+' || s[0] == '-' {
		d, err := time.ParseDuration(s[1:])
		if err != nil || d < 0 || strings.HasPrefix(s[1:], "-") || strings.HasPrefix(s[1:], "+") {
			return time.Time{}, fmt.Errorf("%q: not a duration like +90s or -5m", s)
		}
		if s[0] == '+' {
			return first.Add(d), nil
		}
		return last.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, f := range []struct {
		layout string
		prec   time.Duration
	}{
		{"2006-01-02 15:04:05", time.Second},
		{"2006-01-02T15:04:05", time.Second},
		{"2006-01-02 15:04", time.Minute},
		{"2006-01-02T15:04", time.Minute},
	} {
		if t, err := time.ParseInLocation(f.layout, s, loc); err == nil {
			return within(t, f.prec, first), nil
		}
	}
	for _, f := range []struct {
		layout string
		prec   time.Duration
	}{
		{"15:04:05", time.Second},
		{"15:04", time.Minute},
	} {
		clock, err := time.Parse(f.layout, s)
		if err != nil {
			continue
		}
		return onDay(clock, f.prec, first, last, loc), nil
	}
	return time.Time{}, fmt.Errorf("%q: not a time: use %s", s, TimeForms)
}

// within moves t, a moment typed to precision prec, to first when first
// falls inside that minute or second.
func within(t time.Time, prec time.Duration, first time.Time) time.Time {
	if t.Before(first) && t.Add(prec).After(first) {
		return first
	}
	return t
}

// onDay puts a time of day on the earliest day of [first, last] that has
// it, or on first's day when none does.
func onDay(clock time.Time, prec time.Duration, first, last time.Time, loc *time.Location) time.Time {
	f, l := first.In(loc), last.In(loc)
	at := func(day time.Time) time.Time {
		return time.Date(day.Year(), day.Month(), day.Day(), clock.Hour(), clock.Minute(), clock.Second(), 0, loc)
	}
	for day := f.AddDate(0, 0, -1); !day.After(l.AddDate(0, 0, 1)); day = day.AddDate(0, 0, 1) {
		t := within(at(day), prec, first)
		if !t.Before(first) && !t.After(last) {
			return t
		}
	}
	return at(f)
}
