package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// report is the table: one column per size.
type report struct {
	machine string
	sandtop string
	before  string
	sizes   []*sizeResult
	window  time.Duration
	took    time.Duration
	notes   []string
}

func (r *report) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// A target applies to some sizes; verdict says whether a figure meets it.
type target struct {
	text string
	max  float64
	from int // smallest size it applies to (0: all)
	upTo int // largest size it applies to (0: all)
	// tighter, when set, replaces max from its size on.
	tighter   float64
	tightFrom int
	// orphans says which fleets it applies to: the bulk fleet's (false)
	// or the orphaned shims' (true).
	orphans bool
}

// limit is the target's bound at s, or 0 where it does not apply.
func (t target) limit(s *sizeResult) float64 {
	n := s.Target
	if t.max == 0 || s.Orphans != t.orphans || n < t.from || (t.upTo != 0 && n > t.upTo) {
		return 0
	}
	if t.tighter > 0 && n >= t.tightFrom {
		return t.tighter
	}
	return t.max
}

// write prints the table as Markdown, so that it can go into the README as
// it is: each row a figure, each column a size, ratios with their verdict.
func (r *report) write(w io.Writer) {
	fmt.Fprintf(w, "sandtop bench-compare (%s)\n", r.sandtop)
	if r.before != "" {
		fmt.Fprintf(w, "before: %s, measured beside it\n", r.before)
	}
	fmt.Fprintf(w, "machine: %s\n", r.machine)
	for _, s := range r.sizes {
		fmt.Fprintf(w, "  %s: %d processes, %d sandboxes, load average %.1f at the start, %.1f at the end\n",
			s.label(), s.Procs, s.Sandboxes, s.Load[0], s.Load[1])
	}
	fmt.Fprintln(w)
	head := "| whole process unless marked |"
	rule := "|---|"
	for _, s := range r.sizes {
		head += fmt.Sprintf(" %s |", s.label())
		rule += "---|"
	}
	fmt.Fprintln(w, head+" target |")
	fmt.Fprintln(w, rule+"---|")

	row := func(name string, tg target, cell func(*sizeResult) (string, float64)) {
		line := "| " + name + " |"
		for _, s := range r.sizes {
			text, ratio := cell(s)
			if text == "" {
				text = "-"
			}
			if limit := tg.limit(s); limit > 0 && ratio > 0 {
				if ratio > limit {
					text = "**" + text + "** (missed)"
				} else {
					text += " ✓"
				}
			}
			line += " " + text + " |"
		}
		fmt.Fprintln(w, line+" "+tg.text+" |")
	}
	dur := func(f func(*sizeResult) time.Duration) func(*sizeResult) (string, float64) {
		return func(s *sizeResult) (string, float64) {
			if d := f(s); d > 0 {
				return ms(d), 0
			}
			return "", 0
		}
	}
	ratioOf := func(a, b func(*sizeResult) time.Duration) func(*sizeResult) (string, float64) {
		return func(s *sizeResult) (string, float64) {
			if a(s) == 0 || b(s) == 0 {
				return "", 0
			}
			q := float64(a(s)) / float64(b(s))
			return fmt.Sprintf("%.2f×", q), q
		}
	}
	none := target{}
	sandtopCPU := func(s *sizeResult) time.Duration { return s.SandtopCPU }
	htopCPU := func(s *sizeResult) time.Duration { return s.HtopCPU }
	btopCPU := func(s *sizeResult) time.Duration { return s.BtopCPU }
	row("TUI CPU per 1 s refresh: sandtop watch", none, dur(sandtopCPU))
	if r.before != "" {
		row("TUI CPU per 1 s refresh: before", none, dur(func(s *sizeResult) time.Duration { return s.BeforeTUI }))
	}
	row("TUI CPU per 1 s refresh: htop -d 10 -t", none, dur(htopCPU))
	row("TUI CPU per 1 s refresh: btop (update_ms 1000)", none, dur(btopCPU))
	row("sandtop ÷ htop, idle host", target{text: "≤ 1× at 100", max: 1, upTo: hostSizeForFleet - 1}, func(s *sizeResult) (string, float64) {
		if s.Target >= hostSizeForFleet {
			return "", 0
		}
		return ratioOf(sandtopCPU, htopCPU)(s)
	})
	row("sandtop ÷ htop, with sandboxes", target{text: "≤ 0.15× at 3,000, ≤ 0.1× at 10,000", max: 0.15, from: 3000, tighter: 0.1, tightFrom: 10000}, func(s *sizeResult) (string, float64) {
		if s.Target < hostSizeForFleet {
			return "", 0
		}
		return ratioOf(sandtopCPU, htopCPU)(s)
	})
	if r.before != "" {
		row("before ÷ htop", none, ratioOf(func(s *sizeResult) time.Duration { return s.BeforeTUI }, htopCPU))
	}
	row("sandtop ÷ btop", none, ratioOf(sandtopCPU, btopCPU))
	wake := func(f func(*sizeResult) float64) func(*sizeResult) (string, float64) {
		return func(s *sizeResult) (string, float64) {
			if v := f(s); v > 0 {
				return fmt.Sprintf("%.1f", v), 0
			}
			return "", 0
		}
	}
	row("context switches per second, sandtop", target{text: "≤ 5 at 100", max: 5, upTo: hostSizeForFleet - 1}, func(s *sizeResult) (string, float64) {
		if s.SandtopCPU == 0 {
			return "", 0
		}
		return fmt.Sprintf("%.1f", s.SandtopCS), max(s.SandtopCS, 1e-9)
	})
	row("context switches per second, htop", none, wake(func(s *sizeResult) float64 { return s.HtopCS }))
	if r.before != "" {
		row("context switches per second, before", none, wake(func(s *sizeResult) float64 { return s.BeforeCS }))
	}
	row("blocking waits per second, sandtop (strace -f, 10 s)", none, wake(func(s *sizeResult) float64 { return s.SandtopWake }))
	row("blocking waits per second, htop", none, wake(func(s *sizeResult) float64 { return s.HtopWake }))
	row("blocking waits per second, btop", none, wake(func(s *sizeResult) float64 { return s.BtopWake }))
	row("wake-ups per second (system calls ≥ 100 ms apart), sandtop", target{text: "one per 1 s refresh (≤ 1.15)", max: 1.15}, wake(func(s *sizeResult) float64 { return s.SandtopBursts }))
	row("wake-ups per second, htop", none, wake(func(s *sizeResult) float64 { return s.HtopBursts }))
	row("wake-ups per second, btop", none, wake(func(s *sizeResult) float64 { return s.BtopBursts }))
	row("`sandtop list` wall", none, dur(func(s *sizeResult) time.Duration { return s.List.Wall }))
	row("`ps -eo pid,ppid,pgid,stat,cgroup,args` wall", none, dur(func(s *sizeResult) time.Duration { return s.PS.Wall }))
	row("list ÷ ps wall (median of pairs)", target{text: "≤ 0.6× at 3,000+ (orphaned shims)", max: 0.6, from: 3000, orphans: true}, func(s *sizeResult) (string, float64) {
		return pairRatio(s.ListWall)
	})
	row("`sandtop list` CPU", none, dur(func(s *sizeResult) time.Duration { return s.List.CPU }))
	row("`ps` CPU", none, dur(func(s *sizeResult) time.Duration { return s.PS.CPU }))
	row("list ÷ ps CPU (median of pairs)", target{text: "≤ 0.9× at 3,000+ (orphaned shims)", max: 0.9, from: 3000, orphans: true}, func(s *sizeResult) (string, float64) {
		return pairRatio(s.ListCPU)
	})
	if r.before != "" {
		row("before list wall", none, dur(func(s *sizeResult) time.Duration { return s.Before.Wall }))
		row("before list ÷ ps wall", none, func(s *sizeResult) (string, float64) { return pairRatio(s.BeforeWall) })
		row("before list CPU", none, dur(func(s *sizeResult) time.Duration { return s.Before.CPU }))
		row("before list ÷ ps CPU", none, func(s *sizeResult) (string, float64) { return pairRatio(s.BeforeCPU) })
	}
	row("`sandtop list` peak RSS", none, mib(func(s *sizeResult) int64 { return s.List.MaxRSS }, 0))
	row("`ps` peak RSS", none, mib(func(s *sizeResult) int64 { return s.PS.MaxRSS }, 0))
	row("`sandtop list --json` peak RSS", target{text: "≤ 25 MB at 10,000", max: 25e6, from: 10000}, mib(func(s *sizeResult) int64 { return s.JSONRSS }, 1))
	row("sandtop watch RSS after the window (peak)", target{text: "≤ 40 MiB at 10,000", max: 40 << 20, from: 10000}, func(s *sizeResult) (string, float64) {
		if s.TUIRSS == 0 {
			return "", 0
		}
		return fmt.Sprintf("%.1f MiB (%.1f)", float64(s.TUIRSS)/(1<<20), float64(s.TUIHWM)/(1<<20)), float64(s.TUIRSS)
	})
	row("`sandtop kill --force ID` (10 processes), end to end", target{text: "≤ 0.5 s at 10,000", max: 0.5, from: 10000}, func(s *sizeResult) (string, float64) {
		if s.Kill == 0 {
			return "", 0
		}
		return ms(s.Kill), s.Kill.Seconds()
	})
	row("in process, wall: steady refresh ÷ C floor (readdir + stat)", target{text: "≤ 0.5× at 10,000", max: 0.5, from: 10000},
		func(s *sizeResult) (string, float64) {
			if s.SteadyWall == 0 || s.FloorWall == 0 {
				return "", 0
			}
			q := float64(s.SteadyWall) / float64(s.FloorWall)
			return fmt.Sprintf("%.2f× (%s ÷ %s)", q, ms(s.SteadyWall), ms(s.FloorWall)), q
		})
	row("in process, CPU: steady refresh ÷ C floor", none,
		func(s *sizeResult) (string, float64) {
			if s.Steady == 0 || s.Floor == 0 {
				return "", 0
			}
			q := float64(s.Steady) / float64(s.Floor)
			return fmt.Sprintf("%.2f× (%s ÷ %s)", q, ms(s.Steady), ms(s.Floor)), 0
		})
	fmt.Fprintf(w, "\nTUI CPU: the screens' own CPU time (every thread, /proc/PID/task/*/schedstat) over a %s window in\n"+
		"slices, side by side in one tmux; the median slice. Blocking waits (futex, epoll, nanosleep, poll, select)\n"+
		"per second, strace -f -tt over 10 s of each screen left alone; a wake-up is a run of system calls with\n"+
		"100 ms of silence before it (one per refresh means none in between). list and ps: alternating pairs.\n"+
		"Only the last two rows run in process. View ≤ 2 ms is an in-process benchmark: `make bench` (ui).\n", r.window)
	fmt.Fprintf(w, "Took %s.\n", r.took.Round(time.Second))
	for _, s := range r.sizes {
		if s.Serve != "" {
			fmt.Fprintf(w, "\n%s: %s", s.label(), s.Serve)
		}
	}
	var notes []string
	notes = append(notes, r.notes...)
	for _, s := range r.sizes {
		for _, n := range s.Notes {
			notes = append(notes, fmt.Sprintf("%s: %s", s.label(), n))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\nnotes:\n  %s\n", strings.Join(notes, "\n  "))
	}
}

// pairRatio formats a median of paired ratios.
func pairRatio(q float64) (string, float64) {
	if q == 0 {
		return "", 0
	}
	return fmt.Sprintf("%.2f×", q), q
}

// mib formats a size in MiB; with unit 1 the verdict compares bytes.
func mib(f func(*sizeResult) int64, unit int) func(*sizeResult) (string, float64) {
	return func(s *sizeResult) (string, float64) {
		v := f(s)
		if v == 0 {
			return "", 0
		}
		text := fmt.Sprintf("%.1f MiB", float64(v)/(1<<20))
		if unit == 0 {
			return text, 0
		}
		return text, float64(v)
	}
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// label names a size in the table's header.
func (s *sizeResult) label() string {
	if s.Orphans {
		return thousands(s.Target) + " orphans"
	}
	return thousands(s.Target)
}
