package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// screens are the live screens compared, each refreshing every second:
// htop in its tree view (-d is in tenths), btop (update_ms in its config),
// sandtop's read-only screen and, with -before, an older sandtop's.
var screens = []string{"sandtop", "htop", "btop", "before"}

// idleWindow is how long strace counts each screen's system calls.
const idleWindow = 10 * time.Second

// measureTUIs runs the three screens side by side in a private tmux
// server, reads their CPU time over the window, cut into o.runs slices
// (the median slice is reported), then counts their blocking waits with
// strace, and reads sandtop's RSS.
func measureTUIs(ctx context.Context, res *sizeResult, o options) error {
	// A server of our own, on a socket in a directory of our own: killing
	// it ends every pane and touches no other tmux.
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
	// btop reads its refresh interval from its config only: give it a
	// config directory of its own.
	cfg := filepath.Join(dir, "btop")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg, "btop.conf"), []byte("update_ms = 1000\n"), 0o644); err != nil {
		return err
	}
	cmds := map[string]string{
		"sandtop": "exec " + shellQuote(o.sandtop) + " watch --interval 1s",
		"before":  "exec " + shellQuote(o.before) + " watch --interval 1s",
		"htop":    "exec htop -d 10 -t",
		"btop":    "XDG_CONFIG_HOME=" + shellQuote(dir) + " LANG=C.UTF-8 exec btop --utf-force",
	}
	pids := map[string]int{}
	for _, name := range screens {
		if name == "before" && o.before == "" {
			continue
		}
		if _, err := exec.LookPath(name); name != "sandtop" && name != "before" && err != nil {
			res.note("%s not installed: not measured", name)
			continue
		}
		if _, err := tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "50", cmds[name]); err != nil {
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
	slice := o.window / time.Duration(max(o.runs, 1))
	per := map[string][]time.Duration{}
	cs := map[string]float64{}
	windowStart := time.Now()
	for name, pid := range pids {
		cs[name] = -ctxSwitches(pid)
	}
	for range max(o.runs, 1) {
		before := map[string]time.Duration{}
		for name, pid := range pids {
			before[name] = cpuTime(pid)
		}
		start := time.Now()
		if !sleepCtx(ctx, slice) {
			return ctx.Err()
		}
		refreshes := time.Since(start).Seconds() // all refresh once a second
		for name, pid := range pids {
			per[name] = append(per[name], time.Duration(float64(cpuTime(pid)-before[name])/refreshes))
		}
	}
	for name, pid := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return fmt.Errorf("%s (pid %d) exited during the window", name, pid)
		}
	}
	for name, pid := range pids {
		cs[name] = (cs[name] + ctxSwitches(pid)) / time.Since(windowStart).Seconds()
	}
	res.SandtopCPU, res.HtopCPU, res.BtopCPU = median(per["sandtop"]), median(per["htop"]), median(per["btop"])
	res.BeforeTUI = median(per["before"])
	res.SandtopCS, res.HtopCS, res.BeforeCS = cs["sandtop"], cs["htop"], cs["before"]
	res.TUIRSS, res.TUIHWM = memOf(pids["sandtop"])

	// Blocking waits, all three at once over the same seconds.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wakes, bursts := map[string]float64{}, map[string]float64{}
	for name, pid := range pids {
		wg.Go(func() {
			w, b, err := straceWaits(ctx, pid, filepath.Join(dir, name+".strace"))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.note("strace %s: %v", name, err)
				return
			}
			wakes[name], bursts[name] = w, b
		})
	}
	wg.Wait()
	res.SandtopWake, res.HtopWake, res.BtopWake = wakes["sandtop"], wakes["htop"], wakes["btop"]
	res.SandtopBursts, res.HtopBursts, res.BtopBursts = bursts["sandtop"], bursts["htop"], bursts["btop"]
	return nil
}

// burstGap separates two wake-ups: system calls closer than this belong
// to one piece of work (a refresh), a longer silence means the process
// slept in between.
const burstGap = 100 * time.Millisecond

// waitCalls are the system calls a thread blocks in until something wakes
// it: counting them counts wakeups.
var waitCalls = map[string]bool{
	"futex": true, "epoll_wait": true, "epoll_pwait": true, "epoll_pwait2": true, "nanosleep": true,
	"clock_nanosleep": true, "poll": true, "ppoll": true, "select": true, "pselect6": true, "restart_syscall": true,
}

// straceWaits follows pid and its threads with strace -f -tt over
// idleWindow and returns, per second, the blocking waits (waitCalls) and
// the bursts: the times the process woke at all, counting system calls
// less than burstGap apart as one.
func straceWaits(ctx context.Context, pid int, out string) (waits, bursts float64, err error) {
	cmd := exec.CommandContext(ctx, "strace", "-f", "-tt", "-q", "-o", out, "-p", strconv.Itoa(pid))
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	sleepCtx(ctx, idleWindow)
	// SIGINT detaches strace.
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	b, err := os.ReadFile(out)
	if err != nil {
		return 0, 0, err
	}
	calls, runs := countWaits(b)
	return float64(calls) / idleWindow.Seconds(), float64(runs) / idleWindow.Seconds(), nil
}

// countWaits reads strace -f -tt output ("PID HH:MM:SS.micro call(...")
// and counts the waitCalls begun, and the bursts of system calls.
func countWaits(b []byte) (calls, bursts int) {
	var last time.Duration
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		at, err := time.Parse("15:04:05.000000", f[1])
		if err != nil {
			continue
		}
		t := time.Duration(at.Hour())*time.Hour + time.Duration(at.Minute())*time.Minute +
			time.Duration(at.Second())*time.Second + time.Duration(at.Nanosecond())
		if i == 0 || t-last > burstGap || t < last {
			bursts++
		}
		last = max(last, t)
		if name, _, ok := strings.Cut(f[2], "("); ok && waitCalls[name] {
			calls++
		}
	}
	return calls, bursts
}

// cpuTime is the CPU time of every thread of pid, from the nanosecond
// run times in /proc/PID/task/TID/schedstat (utime+stime have 10 ms
// ticks, too coarse for an idle screen).
func cpuTime(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var ns int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			v, _ := strconv.ParseInt(f[0], 10, 64)
			ns += v
		}
	}
	return time.Duration(ns)
}

// ctxSwitches is the context switches, voluntary and not, of every thread
// of pid so far (/proc/PID/task/TID/status).
func ctxSwitches(pid int) float64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	var n float64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
				c, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				n += c
			}
		}
	}
	return n
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
