package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

//go:embed cfloor/floor.c
var floorC []byte

// sizeResult is everything measured at one size; zero means not measured.
type sizeResult struct {
	Target, Procs, Sandboxes int
	// Orphans is set on a fleet of orphaned shims (list and ps only).
	Orphans bool
	Load    [2]float64 // 1-minute load average at the start and the end

	PS, List          runStat // medians
	ListWall, ListCPU float64 // medians of the paired ratios list/ps
	// Before is the -before binary's list, measured in the same
	// alternation, with its ratios to ps.
	Before                runStat
	BeforeWall, BeforeCPU float64
	BeforeTUI             time.Duration // per refresh
	// Context switches per second over the TUI window, every thread.
	SandtopCS, HtopCS, BeforeCS     float64
	JSONRSS                         int64
	SandtopCPU, HtopCPU, BtopCPU    time.Duration // per refresh
	SandtopWake, HtopWake, BtopWake float64       // blocking waits per second
	// Bursts are the times per second a screen woke at all: runs of
	// system calls less than burstGap apart count once.
	SandtopBursts, HtopBursts, BtopBursts float64
	TUIRSS, TUIHWM                        int64
	Kill                                  time.Duration
	Floor, Steady                         time.Duration // in process, CPU
	FloorWall, SteadyWall                 time.Duration
	// Serve is `sandtop serve`'s cost, as measureServe reports it.
	Serve string
	Notes []string
}

// runStat is one whole-process run of a command.
type runStat struct {
	Wall, CPU time.Duration
	MaxRSS    int64 // bytes
}

func (r *sizeResult) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// measureOne measures the size o.one here: it makes the host that size
// (in a fresh PID namespace, whose init this process is), measures, and
// writes the result to o.out.
func measureOne(ctx context.Context, o options) error {
	if !o.noNS {
		if err := privateProc(); err != nil {
			return err
		}
	}
	res := &sizeResult{Target: o.one, Orphans: o.orphans, Load: [2]float64{loadAvg(), 0}}
	cleanup, err := populate(ctx, o.one, o.orphans)
	defer cleanup()
	if err != nil {
		return err
	}
	settle(ctx, res)
	res.Procs = countProcs()
	if !o.onlyServe {
		fmt.Fprintf(os.Stderr, "   %d processes; list vs ps…\n", res.Procs)
		measureList(res, o)
	}
	if o.orphans {
		// The orphan fleet is for list against ps only.
		o.noTUI, o.onlyServe, o.serveWindow = true, true, 0
	}
	if ctx.Err() == nil && !o.onlyServe {
		measureInProcess(res, o.runs)
	}
	if !o.noTUI && !o.onlyServe && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "   screens side by side…")
		if err := measureTUIs(ctx, res, o); err != nil {
			res.note("screens not measured: %v", err)
		}
	}
	if o.serveWindow > 0 && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "   sandtop serve…")
		if err := measureServe(ctx, res, o); err != nil {
			res.note("sandtop serve not measured: %v", err)
		}
	}
	fleet.ReapZombies()
	if res.Sandboxes > 0 && ctx.Err() == nil && !o.onlyServe {
		fmt.Fprintln(os.Stderr, "   kill…")
		measureKill(res, o)
	}
	res.Load[1] = loadAvg()
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(o.out, b, 0o644)
}

// privateProc gives this mount namespace a /proc of the PID namespace this
// process is init of, without touching the host's mounts.
func privateProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}

// hostSizeForFleet is the smallest size measured with a fleet; smaller
// ones are a host with no sandboxes.
const hostSizeForFleet = 500

// populate brings the host to about n processes: a bulk fleet, or below
// hostSizeForFleet that many idle processes in no sandbox. The returned
// cleanup ends what it started.
func populate(ctx context.Context, n int, orphans bool) (cleanup func(), err error) {
	n -= countProcs()
	if n <= 0 {
		return func() {}, nil
	}
	if n+countProcs() >= hostSizeForFleet {
		spec := fleet.Bulk(n)
		if orphans {
			spec = fleet.BulkOrphans(n)
		}
		f, err := fleet.Start(ctx, spec, fleet.Options{})
		if err != nil {
			return func() {}, err
		}
		return func() {
			if err := f.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "benchcompare: fleet close:", err)
			}
			fleet.ReapZombies()
		}, nil
	}
	var cmds []*exec.Cmd
	cleanup = func() {
		for _, c := range cmds {
			_ = c.Process.Kill() // our own child, by its handle
			_ = c.Wait()
		}
	}
	for range n {
		c := exec.Command("sleep", "infinity")
		if err := c.Start(); err != nil {
			return cleanup, err
		}
		cmds = append(cmds, c)
	}
	return cleanup, nil
}

// psArgs is the ps a user compares `sandtop list` with: every process, with
// what sandtop groups by.
var psArgs = []string{"-eo", "pid,ppid,pgid,stat,cgroup,args"}

// measureList times `ps` and `sandtop list` (and the -before binary's) in
// alternating pairs, and `sandtop list --json` for its peak RSS.
func measureList(res *sizeResult, o options) {
	var ps, list, js, before []runStat
	var wall, cpu, bwall, bcpu []float64
	// pair times ps then bin's list, and keeps both and their ratios.
	pair := func(bin string, runs *[]runStat, wall, cpu *[]float64) bool {
		p, err := timeRun("ps", psArgs...)
		if err != nil {
			res.note("ps: %v", err)
			return false
		}
		l, err := timeRun(bin, "list")
		if err != nil {
			res.note("%s list: %v", bin, err)
			return false
		}
		ps, *runs = append(ps, p), append(*runs, l)
		*wall = append(*wall, float64(l.Wall)/float64(p.Wall))
		*cpu = append(*cpu, float64(l.CPU)/float64(max(p.CPU, time.Millisecond)))
		return true
	}
	for range o.runs {
		if o.before != "" && !pair(o.before, &before, &bwall, &bcpu) {
			return
		}
		if !pair(o.sandtop, &list, &wall, &cpu) {
			return
		}
		j, err := timeRun(o.sandtop, "list", "--json")
		if err != nil {
			res.note("sandtop list --json: %v", err)
			return
		}
		js = append(js, j)
	}
	res.PS, res.List = medianRun(ps), medianRun(list)
	res.JSONRSS = medianRun(js).MaxRSS
	res.ListWall, res.ListCPU = median(wall), median(cpu)
	res.Before, res.BeforeWall, res.BeforeCPU = medianRun(before), median(bwall), median(bcpu)
	if out, err := exec.Command(o.sandtop, "list", "--json").Output(); err == nil {
		var doc model.Document
		if json.Unmarshal(out, &doc) == nil {
			res.Sandboxes = len(doc.Sandboxes)
		}
	}
}

// timeRun runs a command with its output discarded and returns its wall
// time, CPU time and peak RSS.
func timeRun(name string, args ...string) (runStat, error) {
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return runStat{}, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	r := runStat{Wall: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		r.MaxRSS = ru.Maxrss << 10
	}
	return r, nil
}

// measureKill tears down one ten-process sandbox per run with `sandtop
// kill --force`, end to end (start, scan, plan, teardown, verify, exit).
func measureKill(res *sizeResult, o options) {
	out, err := exec.Command(o.sandtop, "list", "--json").Output()
	if err != nil {
		res.note("kill: list: %v", err)
		return
	}
	var doc model.Document
	if err := json.Unmarshal(out, &doc); err != nil {
		res.note("kill: list: %v", err)
		return
	}
	audit := filepath.Join(os.TempDir(), fmt.Sprintf("benchcompare-audit-%d.log", os.Getpid()))
	defer os.Remove(audit)
	var ds []time.Duration
	for _, sb := range doc.Sandboxes {
		if len(ds) == o.runs {
			break
		}
		if len(sb.Processes) != 10 {
			continue
		}
		r, err := timeRun(o.sandtop, "kill", "--force", "--audit-log", audit, sb.ID)
		if err != nil {
			res.note("kill: %v", err)
			return
		}
		ds = append(ds, r.Wall)
	}
	res.Kill = median(ds)
}

// measureInProcess times sandtop's steady refresh in this process against
// the C floor: the "do not regress" figure, in-process against in-process,
// in wall time (the target's measure: two goroutines read in parallel) and
// in CPU time (on a shared machine, wall time is mostly waiting).
func measureInProcess(res *sizeResult, runs int) {
	floor, floorWall, err := cFloor(runs)
	if err != nil {
		res.note("C floor not measured: %v", err)
		return
	}
	s, err := proc.NewScanner(proc.Options{})
	if err != nil {
		res.note("scanner: %v", err)
		return
	}
	defer s.Close()
	if _, err := s.Scan(); err != nil {
		res.note("scan: %v", err)
		return
	}
	var steady, wall []time.Duration
	for range runs {
		start, t0 := selfCPU(), time.Now()
		if _, err := s.Scan(); err != nil {
			res.note("scan: %v", err)
			return
		}
		steady, wall = append(steady, selfCPU()-start), append(wall, time.Since(t0))
	}
	res.Floor, res.Steady = floor, median(steady)
	res.FloorWall, res.SteadyWall = floorWall, median(wall)
}

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cFloor builds cfloor/floor.c with cc and returns the median CPU and
// wall times of its readdir-plus-stat scans.
func cFloor(runs int) (cpu, wall time.Duration, err error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return 0, 0, fmt.Errorf("no C compiler: %w", err)
	}
	dir, err := os.MkdirTemp("", "benchcompare-floor-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	src, bin := filepath.Join(dir, "floor.c"), filepath.Join(dir, "floor")
	if err := os.WriteFile(src, floorC, 0o644); err != nil {
		return 0, 0, err
	}
	if out, err := exec.Command(cc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("cc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "stat", strconv.Itoa(runs)).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("floor: %w", err)
	}
	var cpus, walls []time.Duration
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			return 0, 0, fmt.Errorf("floor printed %q", line)
		}
		w, err1 := strconv.ParseFloat(f[0], 64)
		c, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("floor printed %q", line)
		}
		walls = append(walls, time.Duration(w*float64(time.Millisecond)))
		cpus = append(cpus, time.Duration(c*float64(time.Millisecond)))
	}
	return median(cpus), median(walls), nil
}

// memOf returns VmRSS and VmHWM (peak RSS) from /proc/PID/status, in bytes.
func memOf(pid int) (rss, hwm int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), ":")
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

func countProcs() int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return n
}

func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

func median[T cmp.Ordered](ds []T) T {
	if len(ds) == 0 {
		var zero T
		return zero
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// medianRun is the median of each field on its own.
func medianRun(rs []runStat) runStat {
	var wall, cpu, rss []time.Duration
	for _, r := range rs {
		wall, cpu, rss = append(wall, r.Wall), append(cpu, r.CPU), append(rss, time.Duration(r.MaxRSS))
	}
	return runStat{Wall: median(wall), CPU: median(cpu), MaxRSS: int64(median(rss))}
}
