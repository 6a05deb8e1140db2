package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sandtop/sandtop/proc"
)

// A fleet of thousands of processes keeps both CPUs busy for a while
// after the last one reports in (each starts its runtime, pages in its
// binary), and the load average that start leaves decays over minutes.
// Measured then, every figure carries the fleet's start-up: the host is
// measured once its CPUs have been idle for settleQuiet in a row, or at
// settleMax, whichever comes first, and the report says which.
const (
	settleIdle  = 0.9
	settleQuiet = 3 * time.Second
	settleMax   = 2 * time.Minute
)

// waitIdle waits for the host's CPUs to be settleIdle idle for
// settleQuiet in a row, and says how long it waited.
func waitIdle(ctx context.Context) (time.Duration, bool) {
	start := time.Now()
	prev, ok := cpuTimes()
	if !ok {
		return 0, false
	}
	quiet := time.Duration(0)
	for time.Since(start) < settleMax {
		select {
		case <-ctx.Done():
			return time.Since(start), false
		case <-time.After(time.Second):
		}
		now, ok := cpuTimes()
		if !ok {
			return time.Since(start), false
		}
		busy, ok := now.BusyPercent(prev)
		if !ok {
			return time.Since(start), false
		}
		if busy <= 100*(1-settleIdle) {
			quiet += time.Second
			if quiet >= settleQuiet {
				return time.Since(start), true
			}
		} else {
			quiet = 0
		}
		prev = now
	}
	return time.Since(start), false
}

// cpuTimes reads the host's CPU times from /proc/stat.
func cpuTimes() (proc.CPUTimes, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return proc.CPUTimes{}, false
	}
	t, err := proc.ParseStatCPU(b)
	return t, err == nil
}

// settle waits for an idle host and notes the wait in res.
func settle(ctx context.Context, res *sizeResult) {
	fmt.Fprintln(os.Stderr, "   waiting for the host to settle…")
	waited, idle := waitIdle(ctx)
	if idle {
		res.note("measured once the CPUs had been %.0f%% idle for %v in a row, %v after the fleet started", settleIdle*100, settleQuiet, waited.Round(time.Second))
	} else {
		res.note("the CPUs were not %.0f%% idle for %v in a row within %v of the fleet's start: measured anyway", settleIdle*100, settleQuiet, waited.Round(time.Second))
	}
	res.Load[0] = loadAvg()
}
