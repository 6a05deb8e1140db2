package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/oneproc"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
	"github.com/sandtop/sandtop/ui"
)

// tuiOpts are the flags of the live screen.
type tuiOpts struct {
	interval time.Duration
	readOnly bool
	grace    time.Duration
	audit    string
	all      bool
	record   string
	// note stands on the live screen's status line (the demo's).
	note string
}

func (o *tuiOpts) addFlags(cmd *cobra.Command) {
	o.addViewFlags(cmd)
	f := cmd.Flags()
	f.BoolVar(&o.readOnly, "read-only", false, "never signal anything: the kill keys are disabled (same as sandtop watch)")
	durationFlag(f, &o.grace, "grace", teardown.DefaultGrace, graceRange, "graceful teardown: wait this long after SIGTERM before SIGKILL (0: start on immediate SIGKILL)")
	f.StringVar(&o.audit, "audit-log", "", "append a JSON line per teardown here (default "+teardown.DefaultAuditPath()+")")
}

// addViewFlags are the flags `watch` shares with the root command.
func (o *tuiOpts) addViewFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	durationFlag(f, &o.interval, "interval", ui.DefaultInterval, intervalRange, "time between refreshes (+ and - change it live)")
	f.BoolVar(&o.all, "all", false, "also show the processes in no sandbox, as one host group (key a)")
	f.StringVar(&o.record, "record", "", "record every refresh to this file, as sandtop record does (replay it with sandtop replay)")
}

func newWatchCmd(g *globals) *cobra.Command {
	o := &tuiOpts{readOnly: true}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "The live screen in read-only mode: look, never kill",
		Long: `Open the live screen without any way to signal a process: the teardown
engine is not even constructed, and the kill keys are disabled. Use it on
hosts where looking is all you mean to do, or to hand the screen to someone.`,
		Example: `  sandtop watch
  sandtop watch --interval 5s --all`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTUI(cmd, g, o) },
	}
	o.addViewFlags(cmd)
	return cmd
}

// uiOptions wires the screen: a scanner-backed source always (narrowing
// to one processor after its first scan, when procs is not nil), and the
// teardown engine only when killing is allowed. Read-only means no engine
// at all, not an engine nobody calls.
func (o *tuiOpts) uiOptions(g *globals, rules model.Rules, sc *proc.Scanner, procs *oneproc.Narrower) (ui.Options, error) {
	opts := ui.Options{
		Source:   newScanSource(sc, rules, procs),
		ReadOnly: o.readOnly,
		Interval: o.interval,
		Grace:    o.grace,
		ShowHost: o.all,
		Note:     o.note,
	}
	if o.readOnly {
		return opts, nil
	}
	eng, err := g.engine(rules, sc)
	if err != nil {
		return ui.Options{}, err
	}
	audit := o.audit
	if audit == "" {
		audit = teardown.DefaultAuditPath()
	}
	opts.Killer = newEngineKiller(eng, teardown.DefaultDeadline, audit)
	return opts, nil
}

func runTUI(cmd *cobra.Command, g *globals, o *tuiOpts) (err error) {
	in, out, err := terminal(cmd)
	if err != nil {
		return err
	}
	rules, err := g.rules()
	if err != nil {
		return err
	}
	var sc *proc.Scanner
	if o.record != "" {
		sc, err = g.recordScanner()
	} else {
		// A full read: the table shows every row's user, and the detail
		// pane a process's exe and cwd. A refresh reads them only for
		// processes born since the last one.
		sc, err = g.scanner(nil)
	}
	if err != nil {
		return err
	}
	defer sc.Close()

	procs := oneproc.AfterFirstRefresh()
	defer procs.Stop()
	opts, err := o.uiOptions(g, rules, sc, procs)
	if err != nil {
		return err
	}
	if o.record != "" {
		rec, err := createRecording(o.record, g, rules, "sandtop (live screen)", o.interval, defaultKeyEvery, 0)
		if err != nil {
			return err
		}
		src := &recordingSource{Source: opts.Source, rec: rec, path: o.record}
		opts.Source = src
		defer func() {
			if cerr := src.close(cmd.ErrOrStderr()); err == nil {
				err = cerr
			}
		}()
	}
	return runScreen(cmd, in, out, opts)
}

// runScreen runs the screen on the terminal until it quits.
func runScreen(cmd *cobra.Command, in, out *os.File, opts ui.Options) error {
	// Ask the terminal for its background before bubbletea owns stdin:
	// the adaptive colors need the answer, and the query reads stdin.
	lipgloss.HasDarkBackground()

	m := ui.New(opts)
	prog := ui.NewScreen(cmd.Context(), m, in, out, ui.ScreenOptions{Mouse: true})
	// A closed terminal (SIGHUP) ends the screen, not the process: the
	// teardowns still running must finish and write their audit records.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case <-hup:
			prog.Kill()
		case <-done:
		}
	}()
	_, err := prog.Run()
	close(done)
	// Wait until every teardown still running has thawed what it froze,
	// verified and written its audit record.
	unfinished := m.Shutdown()
	signal.Stop(hup)
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return fmt.Errorf("tui: %w", err)
	}
	if unfinished != nil {
		return &exitError{code: exitFailure, err: unfinished}
	}
	return nil
}

// terminal returns the command's stdin and stdout when both are a terminal,
// which the live screen needs.
func terminal(cmd *cobra.Command) (in, out *os.File, err error) {
	in, inOK := cmd.InOrStdin().(*os.File)
	out, outOK := cmd.OutOrStdout().(*os.File)
	if !inOK || !outOK || !term.IsTerminal(in.Fd()) || !term.IsTerminal(out.Fd()) {
		return nil, nil, usageErr(errors.New("the live screen needs a terminal: use `sandtop list` (or `list --json`) in scripts"))
	}
	return in, out, nil
}
