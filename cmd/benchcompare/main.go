// Command benchcompare measures sandtop as a user meets it, whole process
// against whole process, side by side with the tools an operator already
// runs, at several host sizes, and prints one table of figures, ratios and
// targets:
//
//   - the live screen's CPU per refresh against htop's and btop's, all
//     three side by side in one tmux server, refreshing every second, over
//     the same window (cut into slices; the median slice is reported);
//   - wakeups per idle second of each screen (strace -c -f over 10 s);
//   - context switches per second of each screen over the same window;
//   - `sandtop list` against `ps -eo pid,ppid,pgid,stat,cgroup,args`, wall
//     and CPU, in alternating pairs (the median of the pairs' ratios);
//   - with -before, a second sandtop binary (an older build) beside the
//     first, in the same windows and the same alternation, so that a
//     before/after table is measured under one load;
//   - peak RSS of `list`, `list --json` and of the live screen;
//   - `sandtop kill --force ID` of one ten-process sandbox, end to end;
//   - in process, for the "do not regress" targets: a steady refresh
//     against the C floor (readdir plus open/read/close of every stat);
//   - with -serve-window, `sandtop serve --interval 15s` scraped every 15 s:
//     its average CPU over the window, its RSS, and the time a scrape takes
//     (`make bench-serve`: that alone, -only-serve).
//
// Each size runs in a PID namespace of its own with a private /proc (the
// binary re-executes itself there, as that namespace's init): every tool
// sees exactly the host of that size, whatever else runs on the machine.
// "100" is a host with no sandboxes (idle processes only); the other sizes
// are a sandsim bulk fleet (fleet.Bulk: sandboxes of ten, each with a
// container cgroup of its own), and "orphans:N" one where every sandbox
// is a containerd shim whose containerd is dead (fleet.BulkOrphans), for
// `list` against ps only. CPU load from
// elsewhere still lands on the same cores, which is why every comparison
// is paired or side by side.
//
// `make bench-compare` builds sandtop and runs this. It installs ps, htop,
// btop, tmux and strace with apt-get when they are missing, and must run
// as root (the fleet's cgroups, the namespaces, apt-get). The fleet is
// this binary re-executed, so main calls fleet.MaybeRun first.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
)

func main() {
	fleet.MaybeRun()
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	sizes   []size
	runs    int
	window  time.Duration
	settle  time.Duration
	sandtop string
	// before is an older sandtop measured beside sandtop; "" for none.
	before   string
	noTUI    bool
	noAptGet bool
	noNS     bool
	// serveWindow is how long `sandtop serve` is measured; 0 skips it.
	serveWindow time.Duration
	onlyServe   bool
	// one and out are set in the child that measures one size.
	one     int
	orphans bool
	out     string
}

// size is one host measured: about n processes, a bulk fleet or, with
// orphans, a fleet of orphaned shims.
type size struct {
	n       int
	orphans bool
}

// parseSize reads "3000" or "orphans:3000".
func parseSize(f string) (size, bool) {
	f = strings.TrimSpace(f)
	rest, orphans := strings.CutPrefix(f, "orphans:")
	n, err := strconv.Atoi(rest)
	return size{n: n, orphans: orphans}, err == nil && n >= 1
}

func run(args []string) error {
	var o options
	var sizes string
	fs := flag.NewFlagSet("benchcompare", flag.ContinueOnError)
	fs.StringVar(&sizes, "procs", "100,1000,3000,10000,orphans:3000,orphans:10000", "host sizes to measure (processes), comma-separated; orphans:N is a fleet of orphaned containerd shims, measured with list and ps only")
	fs.IntVar(&o.runs, "runs", 5, "paired runs of each timed command, and slices of the TUI window (medians are reported)")
	fs.DurationVar(&o.window, "window", 20*time.Second, "how long the three screens run side by side at each size")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "how long the screens run before the window opens (their first, cold scan)")
	fs.StringVar(&o.sandtop, "sandtop", "bin/sandtop", "the sandtop binary (e.g. an older build, for a before/after table)")
	fs.StringVar(&o.before, "before", "", "an older sandtop binary measured beside -sandtop, in the same windows and pairs")
	fs.BoolVar(&o.noTUI, "no-tui", false, "skip the screens (htop, btop, sandtop)")
	fs.BoolVar(&o.noAptGet, "no-apt-get", false, "never install missing tools")
	fs.BoolVar(&o.noNS, "no-pidns", false, "measure on the host as it is, not in a PID namespace of the given size")
	fs.DurationVar(&o.serveWindow, "serve-window", 0, "how long sandtop serve (15 s interval) is measured at each size; 0 skips it")
	fs.BoolVar(&o.onlyServe, "only-serve", false, "measure sandtop serve only")
	fs.IntVar(&o.one, "one", 0, "internal: measure this size here and write the result to -out")
	fs.BoolVar(&o.orphans, "orphans", false, "internal: with -one, the fleet is orphaned shims")
	fs.StringVar(&o.out, "out", "", "internal: where -one writes its result")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, f := range strings.Split(sizes, ",") {
		sz, ok := parseSize(f)
		if !ok {
			return fmt.Errorf("-procs %q: want sizes like 100,1000,orphans:3000", sizes)
		}
		o.sizes = append(o.sizes, sz)
	}
	if os.Geteuid() != 0 {
		return errors.New("run as root: the fleet needs cgroups, the sizes PID namespaces, and missing tools are installed with apt-get")
	}
	sandtop, err := filepath.Abs(o.sandtop)
	if err != nil {
		return err
	}
	if _, err := os.Stat(sandtop); err != nil {
		return fmt.Errorf("sandtop binary: %w (make build first, or pass -sandtop)", err)
	}
	o.sandtop = sandtop
	if o.before != "" {
		if o.before, err = filepath.Abs(o.before); err != nil {
			return err
		}
		if _, err := os.Stat(o.before); err != nil {
			return fmt.Errorf("-before: %w", err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if o.one > 0 {
		return measureOne(ctx, o)
	}
	if err := ensureTools(!o.noTUI && !o.onlyServe, o.noAptGet); err != nil {
		return err
	}
	start := time.Now()
	r := &report{machine: describeMachine(), sandtop: o.sandtop, before: o.before, window: o.window}
	for _, sz := range o.sizes {
		fmt.Fprintf(os.Stderr, "== %s\n", sz)
		res, err := measureSize(ctx, o, sz)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.note("%s not measured: %v", sz, err)
			continue
		}
		r.sizes = append(r.sizes, res)
	}
	r.took = time.Since(start)
	r.write(os.Stdout)
	return ctx.Err()
}

// measureSize measures one size: in a child of its own, in a new PID and
// mount namespace (unless -no-pidns), and returns what it found.
func measureSize(ctx context.Context, o options, sz size) (*sizeResult, error) {
	n := sz.n
	dir, err := os.MkdirTemp("", "benchcompare-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "result.json")
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"-one", strconv.Itoa(n), "-out", out, "-sandtop", o.sandtop, "-runs", strconv.Itoa(o.runs),
		"-window", o.window.String(), "-settle", o.settle.String()}
	if o.noTUI {
		args = append(args, "-no-tui")
	}
	if sz.orphans {
		args = append(args, "-orphans")
	}
	if o.before != "" {
		args = append(args, "-before", o.before)
	}
	if o.noNS {
		args = append(args, "-no-pidns")
	}
	if o.serveWindow > 0 {
		args = append(args, "-serve-window", o.serveWindow.String())
	}
	if o.onlyServe {
		args = append(args, "-only-serve")
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if !o.noNS {
		// The child is the namespace's init: when it exits, the kernel
		// kills whatever it left in there.
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("measuring %d: %w", n, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var res sizeResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("result of %d: %w", n, err)
	}
	return &res, nil
}

func (sz size) String() string {
	if sz.orphans {
		return fmt.Sprintf("%d processes, orphaned shims", sz.n)
	}
	return fmt.Sprintf("%d processes", sz.n)
}
