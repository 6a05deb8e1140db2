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

	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/exporter"
	"github.com/sandtop/sandtop/model"
)

type serveOpts struct {
	listen          string
	interval        time.Duration
	perSandbox      bool
	perSandboxLimit int
}

func newServeCmd(g *globals) *cobra.Command {
	o := &serveOpts{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve Prometheus metrics about this host's sandboxes (read-only)",
		Long: `Scan this host every --interval and serve what the last scan saw, for
Prometheus to scrape and alert on:

  /                   a page for people: the endpoints and the host's counts
  /metrics            sandbox, badge, process and scan metrics (Prometheus
                      text or OpenMetrics, as the scraper asks)
  /api/v1/sandboxes   the ` + "`sandtop list --json`" + ` document (?all=1, or
                      true/yes/on, for --all)
  /healthz            200 while scans succeed, 503 otherwise

serve is read-only: like ` + "`sandtop watch`" + ` it never constructs the teardown
engine, and no endpoint can kill. A scrape never scans; a scan that fails
keeps the last good values and counts the error. It listens on loopback
unless --listen says otherwise. Runs until SIGINT or SIGTERM.`,
		Example: `  sandtop serve
  sandtop serve --listen 0.0.0.0:9717 --per-sandbox
  curl -s 127.0.0.1:9717/metrics | grep '^sandtop_sandboxes_badged'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runServe(ctx, g, o, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	addrFlag(f, &o.listen, "listen", exporter.DefaultListen, "address to serve on (loopback unless you choose otherwise)")
	durationFlag(f, &o.interval, "interval", exporter.DefaultInterval, intervalRange, "time between scans")
	f.BoolVar(&o.perSandbox, "per-sandbox", false, "also export one series per sandbox (id label), at most --per-sandbox-limit of them")
	intFlag(f, &o.perSandboxLimit, "per-sandbox-limit", exporter.DefaultPerSandboxLimit, 1, 100000, "most sandboxes with per-sandbox series; troubled ones (orphan, zombie, paused) first")
	return cmd
}

func runServe(ctx context.Context, g *globals, o *serveOpts, errOut io.Writer) error {
	rules, err := g.rules()
	if err != nil {
		return err
	}
	// The metrics carry no exe, cwd or uid: the scan reads them only
	// where a rule needs them.
	sc, err := g.scanner(rules.Needs)
	if err != nil {
		return err
	}
	defer sc.Close()
	exp, err := exporter.New(newScanSource(sc, rules, nil), exporter.Options{
		Interval:        o.interval,
		Runtimes:        runtimes(rules),
		PerSandbox:      o.perSandbox,
		PerSandboxLimit: o.perSandboxLimit,
		Version:         version,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return usageErr(fmt.Errorf("--listen %s: %w", o.listen, err))
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		fmt.Fprintf(errOut, "sandtop serve: listening on %s, which is not loopback: anyone who can reach it can read this host's process list\n", ln.Addr())
	}
	fmt.Fprintf(errOut, "sandtop serve: http://%s/metrics, scanning every %s\n", ln.Addr(), o.interval)
	srv := &http.Server{
		Handler:           exp.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
	}
	scans := make(chan error, 1)
	scanCtx, cancelScans := context.WithCancel(ctx)
	defer cancelScans()
	go func() { scans <- exp.Run(scanCtx) }()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case <-ctx.Done():
	case err = <-served:
		err = fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	cancelScans()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shutCtx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return errors.Join(err, <-scans)
}

// runtimes lists the runtimes the rules can recognise, in rule order: each
// gets its series at 0 before its first sandbox appears.
func runtimes(rules model.Rules) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rules {
		if !seen[r.Name] {
			seen[r.Name] = true
			out = append(out, r.Name)
		}
	}
	return out
}
