package ui

import (
	"strconv"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/ui/format"
)

// ioSampler turns each sandbox's cumulative block IO (its cgroup's io.stat
// or blkio counters) into bytes a second between two refreshes, by
// sandbox key. A sandbox seen for the first time, or whose cgroup has no
// IO figures, has no rate.
type ioSampler struct {
	prevTime time.Time
	prev     map[string]uint64
	rate     map[string]float64
}

func (s *ioSampler) update(v *model.View) {
	if v == nil || v.Snapshot == nil || (!s.prevTime.IsZero() && !v.Time.After(s.prevTime)) {
		return
	}
	cur := make(map[string]uint64, len(s.prev))
	rate := make(map[string]float64, len(s.rate))
	dt := v.Time.Sub(s.prevTime).Seconds()
	for _, sb := range v.Sandboxes {
		r := v.Resources(sb)
		if r == nil || r.IOReadBytes == nil {
			continue
		}
		n := *r.IOReadBytes + *r.IOWriteBytes
		cur[sb.Key()] = n
		if before, ok := s.prev[sb.Key()]; ok && !s.prevTime.IsZero() && dt > 0 && n >= before {
			rate[sb.Key()] = float64(n-before) / dt
		}
	}
	s.prevTime, s.prev, s.rate = v.Time, cur, rate
}

// of returns a sandbox's IO rate in bytes a second, and whether it has one.
func (s *ioSampler) of(sb *model.Sandbox) (float64, bool) {
	if s == nil || sb == nil {
		return 0, false
	}
	r, ok := s.rate[sb.Key()]
	return r, ok
}

// sampled reports whether the sandbox's IO was read at the last refresh.
func (s *ioSampler) sampled(sb *model.Sandbox) bool {
	if s == nil || sb == nil {
		return false
	}
	_, ok := s.prev[sb.Key()]
	return ok
}

// pending is what a figure's cell shows while it is being read.
const pending = "…"

// io is a sandbox row's block IO rate ("-" when its cgroup has none).
func (r *row) io() string {
	if r.kind == rowSandbox && r.st.ioPending {
		return pending
	}
	if r.kind != rowSandbox || !r.st.ioKnown {
		return "-"
	}
	return format.Bytes(uint64(r.st.io)) + "/s"
}

// pressure is a sandbox row's highest pressure and what it is of
// ("12%mem"), "-" when its cgroup has none.
func (r *row) pressure() string {
	if r.kind == rowSandbox && r.st.pressurePending {
		return pending
	}
	if r.kind != rowSandbox || r.st.pressureOf == "" {
		return "-"
	}
	return strconv.FormatFloat(r.st.pressure, 'f', 0, 64) + "%" + r.st.pressureOf
}
