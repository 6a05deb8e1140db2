package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/gcpace"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/hostview"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// Exit codes, shared by every subcommand and documented in README.md.
const (
	exitOK      = 0
	exitFailure = 1 // something survived, a step failed, a check failed
	exitUsage   = 2 // bad flags or arguments, an ID that does not resolve
)

// exitError carries an exit code up to run, which owns the process exit.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(err error) error { return &exitError{code: exitUsage, err: err} }

// noArgs refuses arguments as a usage error: `sandtop frobnicate` is an
// unknown command (exit 2), not a failure (exit 1).
func noArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return usageErr(err)
	}
	return nil
}

// globals are the flags every subcommand shares.
type globals struct {
	procRoot  string
	sysRoot   string
	rulesPath string
	noPresets bool
	verbose   bool

	// stderr is where -v notes go (the command's error stream).
	stderr func() io.Writer
	// noted holds the -v notes already said, each said once per run.
	noted map[string]bool
}

// note says msg on stderr with -v, once per run.
func (g *globals) note(msg string) {
	if !g.verbose || g.noted[msg] {
		return
	}
	if g.noted == nil {
		g.noted = map[string]bool{}
	}
	g.noted[msg] = true
	fmt.Fprintln(g.stderr(), "sandtop:", printableLines(msg))
}

func run(args []string, in io.Reader, out, errOut io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	initCompletion(root)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(errOut, "sandtop:", printableLines(err.Error()))
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailure
}

// printableLines escapes each line of a message (model.Printable) and
// keeps the line breaks between them: an error may list candidates one a
// line, and what a process controls in it (an ID, a path, an argv) must not
// reach the terminal raw. The values are escaped where the message is
// made, so a newline inside one cannot forge a line; this is the last
// guard before stderr.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = model.Printable(l)
	}
	return strings.Join(lines, "\n")
}

func newRootCmd() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "sandtop",
		Short: "See and safely tear down sandbox process trees",
		Long: `sandtop finds the sandboxes on this host (Firecracker microVMs, bwrap boxes,
containerd shims, containers), groups their processes by sandbox ID with
orphan, zombie and paused badges, and tears them down safely.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	g.stderr = root.ErrOrStderr
	tui := &tuiOpts{}
	root.Args = noArgs
	root.RunE = func(cmd *cobra.Command, _ []string) error { return runTUI(cmd, g, tui) }
	tui.addFlags(root)
	pf := root.PersistentFlags()
	pf.StringVar(&g.procRoot, "proc-root", "/proc", "where procfs is mounted (fixture trees in tests)")
	pf.StringVar(&g.sysRoot, "sys-root", "", "prefix for cgroup mount points (fixture trees in tests)")
	_ = pf.MarkHidden("sys-root")
	pf.StringVar(&g.rulesPath, "rules", "", "rules file (default $XDG_CONFIG_HOME/sandtop/rules.toml, then /etc/sandtop/rules.toml)")
	pf.BoolVar(&g.noPresets, "no-presets", false, "use only the rules file, not the built-in presets")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "say on stderr what sandtop chose for you (a default rules file it could not read and skipped)")
	root.AddCommand(newListCmd(g), newRulesCmd(g), newKillCmd(g), newWatchCmd(g), newDemoCmd(g), newServeCmd(g), newConfigCmd(),
		newRecordCmd(g), newReplayCmd(g), newReapCmd(g))
	return root
}

// rules loads the effective rules: the user's file first, then the presets.
func (g *globals) rules() (model.Rules, error) {
	path, data, err := readRules(g.rulesPath, func(p string, err error) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		g.note(fmt.Sprintf("skipping rules file %s: %v (a default rules file that cannot be read counts as absent)", p, err))
	})
	if err != nil {
		return nil, usageErr(err)
	}
	var user model.Rules
	if path != "" {
		if user, err = model.ParseRules(data, path); err != nil {
			return nil, usageErr(err)
		}
	}
	rules := model.Effective(user, !g.noPresets)
	if len(rules) == 0 {
		return nil, usageErr(errors.New("no rules: --no-presets needs a rules file"))
	}
	return rules, nil
}

// scanner opens a scanner. A non-nil need makes its scans lazy
// (proc.Options.Need): commands whose output shows no exe, cwd or uid pass
// their rules' Needs and skip those reads wherever no rule depends on them.
func (g *globals) scanner(need func(*proc.Process) proc.Fields) (*proc.Scanner, error) {
	return g.newScanner(proc.Options{Need: need})
}

// oneShotScanner opens a scanner for a command that scans once or a few
// times and exits (proc.Options.OneShot), lazy like scanner.
func (g *globals) oneShotScanner(need func(*proc.Process) proc.Fields) (*proc.Scanner, error) {
	return g.newScanner(proc.Options{Need: need, OneShot: true})
}

func (g *globals) newScanner(opts proc.Options) (*proc.Scanner, error) {
	if err := checkProcRoot(g.procRoot); err != nil {
		return nil, usageErr(err)
	}
	opts.ProcRoot, opts.SysRoot = g.procRoot, g.sysRoot
	return proc.NewScanner(opts)
}

// checkProcRoot refuses a --proc-root that is not there or holds no
// process: a mistyped flag (exit 2), said once, not an empty host. procfs
// lists its own files before the pids, so this reads a few dozen entries.
func checkProcRoot(root string) error {
	d, err := os.Open(root)
	if err != nil {
		return fmt.Errorf("--proc-root %s: %w", model.Printable(root), errors.Unwrap(err))
	}
	defer d.Close()
	for {
		names, err := d.Readdirnames(64)
		for _, n := range names {
			if _, err := strconv.Atoi(n); err == nil {
				return nil
			}
		}
		if err != nil {
			return fmt.Errorf("--proc-root %s: no process directories there: not a procfs", model.Printable(root))
		}
	}
}

// view scans once and groups the result, reading only what the rules
// need (a lazy scan), and with uids every process's status too, for
// output that shows each process's uid. heap, when not nil, is the
// one-shot command's collector tuning (gcpace.OneShot).
func (g *globals) view(uids bool, heap *gcpace.Tuner) (*model.View, error) {
	// The built-in rules take milliseconds to compile, and the scan asks
	// them nothing until it has listed the host and read every stat, so
	// they are loaded meanwhile. Their error, if any, still comes first.
	loadRules := sync.OnceValues(g.rules)
	go loadRules()
	need := sync.OnceValue(func() func(*proc.Process) proc.Fields {
		rules, err := loadRules()
		if err != nil {
			return func(*proc.Process) proc.Fields { return 0 }
		}
		alike := rules.NeedsAlike()
		if !uids {
			return alike
		}
		return func(p *proc.Process) proc.Fields { return alike(p) | proc.FieldStatus }
	})
	s, err := g.oneShotScanner(func(p *proc.Process) proc.Fields { return need()(p) })
	if err != nil {
		if _, rerr := loadRules(); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	// The kernel log's OOM kills are read while the scan runs; the cgroup
	// figures of the sandboxes it finds, after it, as far as the output
	// shows them (a one-shot look has no durations, so nothing is stuck).
	watch := hostview.NewWatcher(s)
	defer watch.Close()
	watch.ReadLogAhead()
	snap, err := s.Scan()
	// Nothing scans again: the scanner's cache of every process (a few
	// MB at 10,000) is let go before grouping, which has its own.
	s.Close()
	rules, rerr := loadRules()
	if rerr != nil {
		return nil, rerr
	}
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	heap.Scanned()
	if uids {
		// The document carries every figure and each sandbox's network.
		watch.SetNeeds(model.ResourceNeeds{Network: true})
	} else {
		// The text table shows no cgroup figures, and one look makes no
		// badge of one.
		watch.SetNeeds(model.ResourceNeeds{Once: true})
	}
	return hostview.Group(snap, rules, watch), nil
}

// scanView scans once and groups the result (see hostview.Group).
func scanView(s *proc.Scanner, rules model.Rules) (*model.View, error) {
	snap, err := s.Scan()
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	return hostview.Group(snap, rules, nil), nil
}

// initCompletion makes cobra's completion command now, so it can carry an
// example like every other command. It must run after SetOut: the command
// keeps the writer it finds when it is made.
func initCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		c.Example = `  sandtop completion bash > /etc/bash_completion.d/sandtop
  sandtop completion zsh > "${fpath[1]}/_sandtop"
  sandtop completion fish > ~/.config/fish/completions/sandtop.fish
  # then: sandtop kill <TAB> offers the live sandbox IDs`
		// Without this cobra prints the help for a shell it does not
		// know (tcsh) and exits 0.
		c.Args = cobra.ArbitraryArgs
		bashCompletion(c)
		c.RunE = func(_ *cobra.Command, args []string) error {
			var shells []string
			for _, s := range c.Commands() {
				if s.IsAvailableCommand() {
					shells = append(shells, s.Name())
				}
			}
			if len(args) == 0 {
				return usageErr(fmt.Errorf("completion needs a shell: %s", strings.Join(shells, ", ")))
			}
			return usageErr(fmt.Errorf("no completion for %q: sandtop completes %s", args[0], strings.Join(shells, ", ")))
		}
	}
}

// engine makes the teardown engine of every command that kills (kill, the
// screen, reap), on the host's roots. It verifies with the command's own
// scanner: its cache is warm, so a verify round costs a steady refresh,
// not a cold read of the host.
func (g *globals) engine(rules model.Rules, sc *proc.Scanner) (*teardown.Engine, error) {
	eng, err := teardown.New(teardown.Options{ProcRoot: g.procRoot, SysRoot: g.sysRoot, Rules: rules, Scanner: sc})
	if err != nil {
		return nil, fmt.Errorf("teardown engine: %w", err)
	}
	return eng, nil
}
