package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
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
	prevIdle, prevTotal, ok := cpuTimes()
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
		idle, total, ok := cpuTimes()
		if !ok || total <= prevTotal {
			return time.Since(start), false
		}
		if float64(idle-prevIdle)/float64(total-prevTotal) >= settleIdle {
			quiet += time.Second
			if quiet >= settleQuiet {
				return time.Since(start), true
			}
		} else {
			quiet = 0
		}
		prevIdle, prevTotal = idle, total
	}
	return time.Since(start), false
}

// cpuTimes reads the host's idle (idle and iowait) and total CPU time,
// in ticks, from the first line of /proc/stat.
func cpuTimes() (idle, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i == 3 || i == 4 {
			idle += v
		}
	}
	return idle, total, true
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
