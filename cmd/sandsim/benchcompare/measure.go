package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

//go:embed cfloor/floor.c
var floorC []byte

// measureAll fills r, skipping (with a note) what cannot be measured here.
func measureAll(ctx context.Context, r *report, o options) {
	if o.onlyServe {
		if err := measureServe(ctx, r, o); err != nil {
			r.note("sandtop serve not measured: %v", err)
		}
		return
	}
	if err := measureCFloor(r, o.runs); err != nil {
		r.note("C floor not measured: %v", err)
	}
	if d, err := timeCommand(o.runs, "ps", "-eo", "pid,ppid,stat,cgroup,args"); err != nil {
		r.note("ps not measured: %v", err)
	} else {
		r.ps = d
	}
	measureScans(r, o.runs)
	if d, err := timeCommand(o.runs, o.sandtop, "list"); err != nil {
		r.note("sandtop list not measured: %v", err)
	} else {
		r.list = d
	}
	if o.noTUI || ctx.Err() != nil {
		return
	}
	if err := measureTUIs(ctx, r, o); err != nil {
		r.note("htop/sandtop CPU not measured: %v", err)
	}
	if o.serveWindow > 0 && ctx.Err() == nil {
		if err := measureServe(ctx, r, o); err != nil {
			r.note("sandtop serve not measured: %v", err)
		}
	}
}

// measureCFloor builds cfloor/floor.c with cc and runs each of its scans.
func measureCFloor(r *report, runs int) error {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return fmt.Errorf("no C compiler: %w", err)
	}
	dir, err := os.MkdirTemp("", "benchcompare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src, bin := filepath.Join(dir, "floor.c"), filepath.Join(dir, "floor")
	if err := os.WriteFile(src, floorC, 0o644); err != nil {
		return err
	}
	if out, err := exec.Command(cc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		return fmt.Errorf("cc: %v\n%s", err, out)
	}
	for _, m := range []struct {
		mode string
		dst  *time.Duration
	}{{"stat", &r.cStat}, {"full", &r.cFull}, {"same", &r.cSame}} {
		out, err := exec.Command(bin, m.mode, strconv.Itoa(runs)).Output()
		if err != nil {
			return fmt.Errorf("floor %s: %w", m.mode, err)
		}
		var ds []time.Duration
		for _, f := range strings.Fields(string(out)) {
			ms, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return fmt.Errorf("floor %s printed %q", m.mode, f)
			}
			ds = append(ds, time.Duration(ms*float64(time.Millisecond)))
		}
		*m.dst = median(ds)
	}
	return nil
}

// timeCommand runs a command runs times with its output discarded and
// returns the median wall time.
func timeCommand(runs int, name string, args ...string) (time.Duration, error) {
	var ds []time.Duration
	for range runs {
		cmd := exec.Command(name, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%s: %v: %s", name, err, bytes.TrimSpace(stderr.Bytes()))
		}
		ds = append(ds, time.Since(start))
	}
	return median(ds), nil
}

// measureScans times sandtop's scanner in this process: a cold scan (new
// scanner, everything read, as `sandtop list` does), a steady refresh with
// nothing changed, and model.Build on the steady snapshot.
func measureScans(r *report, runs int) {
	rules := model.Effective(nil, true)
	var cold, steady, build []time.Duration
	for range runs {
		start := time.Now()
		s, err := proc.NewScanner(proc.Options{})
		if err != nil {
			r.note("scanner: %v", err)
			return
		}
		if _, err := s.Scan(); err != nil {
			r.note("scan: %v", err)
			s.Close()
			return
		}
		cold = append(cold, time.Since(start))
		s.Close()
	}
	s, err := proc.NewScanner(proc.Options{})
	if err != nil {
		r.note("scanner: %v", err)
		return
	}
	defer s.Close()
	snap, err := s.Scan()
	if err != nil {
		r.note("scan: %v", err)
		return
	}
	b := model.NewBuilder(rules)
	v := b.Build(snap, nil)
	for range runs {
		start := time.Now()
		if snap, err = s.Scan(); err != nil {
			r.note("scan: %v", err)
			return
		}
		steady = append(steady, time.Since(start))
		start = time.Now()
		v = b.Build(snap, v)
		build = append(build, time.Since(start))
	}
	r.cold, r.steady, r.build = median(cold), median(steady), median(build)
	r.sandboxes = len(v.Sandboxes)
}

// measureTUIs runs htop and sandtop side by side in a private tmux server
// and reads their CPU time over the window.
func measureTUIs(ctx context.Context, r *report, o options) error {
	// A server of our own, on a socket in a directory of our own: killing
	// it ends both panes and touches no other tmux, and removing the
	// directory leaves no socket behind (tmux does not unlink it).
	dir, err := os.MkdirTemp("", "benchcompare-tmux-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "sock")
	tmux := func(args ...string) ([]byte, error) {
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return out, nil
	}
	defer func() { _, _ = tmux("kill-server") }()
	sandtop, err := filepath.Abs(o.sandtop)
	if err != nil {
		return err
	}
	panes := map[string]string{
		"htop":    "exec htop -d 10 -t",
		"sandtop": "exec " + shellQuote(sandtop) + " watch --interval 1s",
	}
	pids := map[string]int{}
	for _, name := range []string{"htop", "sandtop"} {
		if _, err := tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "50", panes[name]); err != nil {
			return err
		}
		out, err := tmux("list-panes", "-t", name, "-F", "#{pane_pid}")
		if err != nil {
			return err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			return fmt.Errorf("pane pid of %s: %q", name, out)
		}
		pids[name] = pid
	}
	if !sleepCtx(ctx, o.settle) {
		return ctx.Err()
	}
	before := map[string]uint64{}
	for name, pid := range pids {
		ticks, err := cpuTicks(pid)
		if err != nil {
			return fmt.Errorf("%s (pid %d) is not running: %w", name, pid, err)
		}
		before[name] = ticks
	}
	if !sleepCtx(ctx, o.window) {
		return ctx.Err()
	}
	refreshes := o.window.Seconds() // both refresh once a second
	for name, pid := range pids {
		ticks, err := cpuTicks(pid)
		if err != nil {
			return fmt.Errorf("%s (pid %d) exited during the window: %w", name, pid, err)
		}
		perRefresh := time.Duration(float64(ticks-before[name]) / 100 / refreshes * float64(time.Second))
		if name == "htop" {
			r.htopCPU = perRefresh
		} else {
			r.sandtopCPU = perRefresh
		}
	}
	r.window = o.window
	r.rss, r.hwm = memOf(pids["sandtop"])
	return nil
}

// cpuTicks returns utime+stime (stat fields 14 and 15, in USER_HZ ticks).
func cpuTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, fmt.Errorf("malformed stat %q", b)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed stat %q", b)
	}
	utime, err1 := strconv.ParseUint(f[14-3], 10, 64)
	stime, err2 := strconv.ParseUint(f[15-3], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed stat %q", b)
	}
	return utime + stime, nil
}

// memOf returns VmRSS and VmHWM (peak RSS) from /proc/PID/status, in bytes.
func memOf(pid int) (rss, hwm uint64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), ":")
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
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

func median[T cmp.Ordered](ds []T) T {
	if len(ds) == 0 {
		var zero T
		return zero
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
