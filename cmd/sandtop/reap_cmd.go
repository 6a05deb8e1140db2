package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/exporter"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/reap"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
	"github.com/sandtop/sandtop/model/words"
	"github.com/sandtop/sandtop/teardown"
)

type reapOpts struct {
	selects   []string
	forD      time.Duration
	minAge    time.Duration
	max       int
	interval  time.Duration
	once      bool
	apply     bool
	grace     time.Duration
	deadline  time.Duration
	listen    string
	logFormat string
	audit     string
	stateDir  string
	quarAfter int
	retryQuar bool
}

// defaultSelects is the reaper's selection when none is given: orphans and
// leftovers, what nobody else will clean up.
var defaultSelects = []string{"badge:orphan", "badge:leftover"}

func newReapCmd(g *globals) *cobra.Command {
	o := &reapOpts{}
	cmd := &cobra.Command{
		Use:   "reap [flags]",
		Short: "Tear down orphans and leftovers on a policy (dry run unless --apply)",
		Long: `Watch the host and tear down the sandboxes nobody else will: by default
orphans (their supervisor is gone) and leftovers (no process left, but
directories, sockets or cgroups remain).

A sandbox is reaped only when it has matched the selection in every scan
for --for under the same identity (the same root process, or the same
leftover paths: a supervisor that restarts within the window, as containerd
does, or a runner that replaces its VM, starts the clock again), is older
than --min-age, and its identity is checked again by the teardown engine as
for any kill. At most --max teardowns a pass, oldest first.

Without --apply nothing is touched: every candidate is logged with what
would be done and why ("orphan for 2m of 10m"). With --apply each teardown
goes through the same engine as kill, with an audit record carrying the
reaper's reason. --apply is refused for a selection not restricted by a
badge, and with --for under 1m unless --once.

A sandbox whose teardown failed --quarantine-after times in a row (default
3) with the same evidence is quarantined: logged with its last error and not
tried again until its evidence changes or --retry-quarantined; the count
and the quarantine are kept in --state-dir across runs, so reap --once from
a timer quarantines as the long-running reaper does.

--select takes the live screen's filter language and may be repeated: a
sandbox is selected when any of them matches. One JSON line (or text line)
per decision goes to stdout. --listen serves the metrics of sandtop serve,
fed by the reaper's own scans, beside the reaper's (sandtop_reaper_*), and
/api/v1/sandboxes. Under systemd: sandtop config systemd reap. SIGTERM
lets a running teardown finish, then exits.`,
		Example: `  sandtop reap                                  # dry run every minute: what would be reaped, and why
  sandtop reap --once --for 0                   # one dry-run pass now
  sandtop reap --apply --for 10m --max 10       # the janitor: orphans and leftovers, oldest first
  sandtop reap --apply --select 'badge:orphan runtime:vm0' --listen 127.0.0.1:9310
  sandtop reap --once --for 0 --apply --select badge:leftover --log-format text`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.NoArgs(cmd, args); err != nil {
				return usageErr(err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReap(cmd.Context(), g, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.selects, "select", nil, "filter-language selection; repeatable, any matches (default badge:orphan, badge:leftover)")
	durationFlag(f, &o.forD, "for", 10*time.Minute, spanRange, "how long a sandbox must match, every scan under one identity, before it is reaped")
	durationFlag(f, &o.minAge, "min-age", 10*time.Minute, spanRange, "reap only sandboxes at least this old")
	intFlag(f, &o.max, "max", 10, 0, 10000, "at most this many teardowns a pass, oldest first (0: no bound)")
	durationFlag(f, &o.interval, "interval", time.Minute, intervalRange, "pause between passes")
	f.BoolVar(&o.once, "once", false, "one pass (after watching for --for), then exit")
	f.BoolVar(&o.apply, "apply", false, "tear down; without it nothing is touched (dry run)")
	durationFlag(f, &o.grace, "grace", teardown.DefaultGrace, graceRange, "how long a teardown waits after SIGTERM before SIGKILL")
	durationFlag(f, &o.deadline, "deadline", teardown.DefaultDeadline, deadlineRange, "how long a teardown keeps killing newcomers before reporting survivors")
	addrFlag(f, &o.listen, "listen", "", "serve Prometheus metrics on this address (/metrics)")
	choiceFlag(f, &o.logFormat, "log-format", "", []string{"text", "json"}, "json or text (default: text on a terminal, json otherwise)")
	f.StringVar(&o.audit, "audit-log", "", "append a JSON line per teardown here (default "+teardown.DefaultAuditPath()+")")
	f.StringVar(&o.stateDir, "state-dir", reap.DefaultStateDir, "keep the quarantine's state (failed teardowns) here, across runs")
	intFlag(f, &o.quarAfter, "quarantine-after", reap.DefaultQuarantineAfter, 1, 1000, "quarantine a sandbox whose teardown failed this many times in a row with the same evidence")
	f.BoolVar(&o.retryQuar, "retry-quarantined", false, "give each quarantined sandbox one more try (one more failure quarantines it again)")
	return cmd
}

func runReap(ctx context.Context, g *globals, o *reapOpts, out, errOut io.Writer) error {
	cfg, err := o.config()
	if err != nil {
		return usageErr(err)
	}
	if err := cfg.Check(); err != nil {
		return usageErr(err)
	}
	format := o.logFormat
	if format == "" {
		format = "json"
		if f, ok := out.(*os.File); ok && term.IsTerminal(f.Fd()) {
			format = "text"
		}
	}
	logOut := out
	if format == "json" {
		logOut = model.JSONSafe(out)
	}
	logger, err := reap.NewLogger(logOut, format)
	if err != nil {
		return usageErr(err)
	}
	rules, err := g.rules()
	if err != nil {
		return err
	}
	// A full read: a daemon reads a process's static fields once, so a
	// lazy scan would save only its first scan.
	sc, err := g.scanner(nil)
	if err != nil {
		return err
	}
	defer sc.Close()
	eng, err := g.engine(rules, sc)
	if err != nil {
		return err
	}
	metrics := reap.NewMetrics()
	r, err := reap.New(cfg, rules, sc, eng, logger, metrics)
	if err != nil {
		return usageErr(err)
	}
	if o.listen != "" {
		// serve's exporter, fed with the reaper's own scans, serves its
		// metrics and /api/v1/sandboxes beside the reaper's series.
		exp, err := exporter.New(nil, exporter.Options{
			Interval: o.interval, Runtimes: runtimes(rules), Version: version, Collectors: metrics.Collectors(),
		})
		if err != nil {
			return err
		}
		r.Observe = exp.Observe
		stopServer, err := serveHTTP(o.listen, exp.Handler(), errOut)
		if err != nil {
			return err
		}
		defer stopServer()
	}
	// SIGTERM and SIGINT close stop: the teardown under way finishes, then
	// Run returns. ctx stays for the caller's own cancellation.
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sigs:
			close(stop)
		case <-done:
		}
	}()
	if err := r.Run(ctx, stop); err != nil {
		return err
	}
	if r.Failed() > 0 {
		return &exitError{code: exitFailure, err: fmt.Errorf("%s incomplete: see the failed decisions", words.Count(r.Failed(), "teardown", "teardowns"))}
	}
	return nil
}

func (o *reapOpts) config() (reap.Config, error) {
	texts := o.selects
	if len(texts) == 0 {
		texts = defaultSelects
	}
	cfg := reap.Config{
		Policy: reap.Policy{For: o.forD, MinAge: o.minAge, Max: o.max},
		Texts:  texts, Interval: o.interval, Once: o.once, Apply: o.apply,
		Grace: o.grace, Deadline: o.deadline, AuditPath: o.audit,
		StateDir: o.stateDir, QuarantineAfter: o.quarAfter, RetryQuarantined: o.retryQuar,
	}
	if cfg.AuditPath == "" {
		cfg.AuditPath = teardown.DefaultAuditPath()
	}
	// A scan later than this after the last one breaks continuity: the
	// interval twice over, plus what a full pass of teardowns may take.
	cfg.MaxGap = 2*o.interval + time.Duration(max(o.max, 1))*(o.grace+o.deadline+5*time.Second)
	for _, t := range texts {
		q, err := query.Parse(t)
		if err != nil {
			return cfg, fmt.Errorf("--select %q: %w", t, err)
		}
		if q.Empty() {
			return cfg, fmt.Errorf("--select %q: empty selection", t)
		}
		cfg.Selects = append(cfg.Selects, q)
	}
	return cfg, nil
}

// serveHTTP serves h on addr until the returned func is called.
func serveHTTP(addr string, h http.Handler, errOut io.Writer) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--listen %s: %w", addr, err))
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(errOut, "sandtop: metrics:", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
