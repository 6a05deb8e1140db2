package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// report holds every figure measured; zero means not measured.
type report struct {
	machine    string
	procs      int
	sandboxes  int
	cStat      time.Duration // C: readdir + stat
	cFull      time.Duration // C: readdir + stat + cmdline + cgroup
	cSame      time.Duration // C: the files a sandtop cold scan reads
	ps         time.Duration
	cold       time.Duration
	steady     time.Duration
	build      time.Duration
	list       time.Duration
	window     time.Duration
	htopCPU    time.Duration
	sandtopCPU time.Duration
	rss, hwm   uint64
	notes      []string
}

func (r *report) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// write prints the table: each figure, then its ratios against the
// references (the C floor, ps, htop), with sandtop's target beside each.
func (r *report) write(w io.Writer) {
	fmt.Fprintf(w, "sandtop bench-compare: %d processes (bulk fleet, %d sandboxes)\n", r.procs, r.sandboxes)
	fmt.Fprintf(w, "machine: %s\n\n", r.machine)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tvalue\tratio\ttarget")
	row := func(name string, v time.Duration, ratios ...string) {
		if v == 0 {
			fmt.Fprintf(tw, "%s\t-\t\t\n", name)
			return
		}
		first := ""
		if len(ratios) > 0 {
			first = ratios[0]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, ms(v), first)
		for _, more := range ratios[1:] {
			fmt.Fprintf(tw, "\t\t%s\n", more)
		}
	}
	row("C floor: readdir + open/read/close stat", r.cStat, "1.00× floor\t")
	row("C: readdir + stat + cmdline + cgroup", r.cFull, ratio(r.cFull, r.cStat, "floor", 0))
	row("C: sandtop's files (+ status, exe, cwd)", r.cSame, ratio(r.cSame, r.cStat, "floor", 0))
	row("ps -eo pid,ppid,stat,cgroup,args", r.ps, ratio(r.ps, r.cStat, "floor", 0))
	row("sandtop cold scan (in process)", r.cold,
		ratio(r.cold, r.cFull, "C stat+cmdline+cgroup", 1.3),
		ratio(r.cold, r.cSame, "C, same files", 0),
		ratio(r.cold, r.ps, "ps", 0.6))
	row("sandtop steady refresh (in process)", r.steady, ratio(r.steady, r.cStat, "floor", 0.5))
	row("model.Build, steady (in process)", r.build, ratio(r.build, r.steady, "steady refresh", 0.1))
	row("sandtop list (whole process)", r.list, ratio(r.list, r.ps, "ps", 0))
	row("htop CPU per refresh (-d 10 -t)", r.htopCPU, "\t")
	row("sandtop CPU per refresh (watch --interval 1s)", r.sandtopCPU, ratio(r.sandtopCPU, r.htopCPU, "htop", 0.25))
	if r.rss > 0 {
		fmt.Fprintf(tw, "sandtop RSS after the window (peak)\t%.1f MiB (%.1f)\t\t≤ 60 MiB\n", float64(r.rss)/(1<<20), float64(r.hwm)/(1<<20))
	}
	tw.Flush()
	if r.procs < 9000 {
		fmt.Fprintf(w, "\nThe targets are set for 10,000 processes; at %d fixed costs weigh more.\n", r.procs)
	}
	if r.window > 0 {
		fmt.Fprintf(w, "\nCPU per refresh: utime+stime over %s divided by %.0f refreshes (both refresh every second).\n", r.window, r.window.Seconds())
	}
	if len(r.notes) > 0 {
		fmt.Fprintf(w, "\nnotes:\n  %s\n", strings.Join(r.notes, "\n  "))
	}
}

// ratio formats v/ref, with the target (≤ max) when max > 0.
func ratio(v, ref time.Duration, of string, max float64) string {
	if v == 0 || ref == 0 {
		return "\t"
	}
	s := fmt.Sprintf("%.2f× %s", float64(v)/float64(ref), of)
	if max == 0 {
		return s + "\t"
	}
	verdict := "ok"
	if float64(v)/float64(ref) > max {
		verdict = "MISSED"
	}
	return fmt.Sprintf("%s\t≤ %.2g× (%s)", s, max, verdict)
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
