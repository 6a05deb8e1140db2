// Command benchcompare runs sandtop's whole-process comparisons with public
// tools on one sandsim fleet and prints a table of figures and ratios:
//
//   - the floor in C (readdir of /proc plus open/read/close of every stat,
//     with cmdline and cgroup added, and with every file a sandtop cold scan
//     reads), built with cc when there is one;
//   - `ps -eo pid,ppid,stat,cgroup,args`;
//   - sandtop's cold scan and steady refresh, in this process, and
//     `sandtop list` as a whole process;
//   - htop's and sandtop's own CPU per refresh, side by side in tmux
//     (htop -d 10 -t, sandtop watch --interval 1s), from utime+stime in
//     /proc/PID/stat over a window, and sandtop's RSS at the end.
//
// `make bench-compare` builds sandtop and runs this. It installs htop and
// tmux with apt-get when they are missing, and must run as root (the fleet's
// cgroups, apt-get). The fleet is this binary re-executed, so main calls
// fleet.MaybeRun first.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
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
	procs    int
	runs     int
	window   time.Duration
	sandtop  string
	settle   time.Duration
	noTUI    bool
	noAptGet bool
}

func run(args []string) error {
	var o options
	fs := flag.NewFlagSet("benchcompare", flag.ContinueOnError)
	fs.IntVar(&o.procs, "procs", 10000, "processes in the bulk fleet")
	fs.IntVar(&o.runs, "runs", 5, "runs of each timed command (the median is reported)")
	fs.DurationVar(&o.window, "window", 60*time.Second, "how long htop and sandtop run side by side")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "how long the TUIs run before the window opens (their first, cold scan)")
	fs.StringVar(&o.sandtop, "sandtop", "bin/sandtop", "the sandtop binary")
	fs.BoolVar(&o.noTUI, "no-tui", false, "skip the htop/sandtop CPU comparison")
	fs.BoolVar(&o.noAptGet, "no-apt-get", false, "never install missing tools")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("run as root: the fleet needs cgroups, and missing tools are installed with apt-get")
	}
	if _, err := os.Stat(o.sandtop); err != nil {
		return fmt.Errorf("sandtop binary: %w (make build first, or pass -sandtop)", err)
	}
	if err := ensureTools(!o.noTUI, o.noAptGet); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	fmt.Fprintf(os.Stderr, "starting a fleet of %d processes…\n", o.procs)
	f, err := fleet.Start(ctx, fleet.Bulk(o.procs), fleet.Options{})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil {
			fmt.Fprintln(os.Stderr, "benchcompare: fleet close:", cerr)
		}
		fleet.ReapZombies()
	}()

	r := &report{machine: describeMachine(), procs: countProcs()}
	measureAll(ctx, r, o)
	r.write(os.Stdout)
	return ctx.Err()
}
