// Package exporter is `sandtop serve`: a read-only Prometheus exporter for
// the sandboxes of one host. It scans on its own interval through the same
// Source the live screen refreshes from, keeps the last good view, and
// answers every scrape from it: a scrape never scans, and a failed scan
// keeps the last good values (a gap would hide a leak) and counts the
// error.
//
// The package never imports teardown: nothing here can signal a process or
// write a cgroup file, whatever a client sends.
package exporter

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sandtop/sandtop/model"
)

// Source produces views of the host, each a steady refresh of the last
// (cmd/sandtop wires the live screen's scanSource: one scanner and Builder).
type Source interface {
	Scan() (*model.View, error)
}

// Scan error sources, the values of sandtop_scan_errors_total's label.
const (
	// SourceProc: the scan failed as a whole (/proc could not be listed);
	// the last good values stay.
	SourceProc = "proc"
	// SourceUnixSockets: the scan succeeded but /proc/net/unix could not
	// be read, so a supervisor known by its socket could not be judged.
	SourceUnixSockets = "unix_sockets"
)

// Defaults of the serve flags.
const (
	DefaultListen          = "127.0.0.1:9717"
	DefaultInterval        = 15 * time.Second
	DefaultPerSandboxLimit = 500
)

// Options configure an Exporter.
type Options struct {
	// Interval is the time between scans; /healthz turns unhealthy when no
	// scan has succeeded for three of them (or three scans' time, when a
	// scan takes longer than the interval).
	Interval time.Duration
	// Runtimes are the runtime names the rules know (model.Rule.Name): each
	// gets its series, 0 while it has no sandbox, so that an alert can say
	// `> 0` and a dashboard shows a flat line rather than a gap.
	Runtimes []string
	// PerSandbox adds the per-sandbox series, for at most PerSandboxLimit
	// sandboxes (troubled ones first).
	PerSandbox      bool
	PerSandboxLimit int
	// Version is sandtop's version, for sandtop_build_info.
	Version string
	// Collectors are registered beside sandtop's own (the reaper's
	// sandtop_reaper_* metrics, for one).
	Collectors []prometheus.Collector
}

// Exporter holds the last good view and the registry that exposes it.
type Exporter struct {
	src  Source
	opts Options
	reg  *prometheus.Registry

	scanDuration prometheus.Histogram
	scanErrors   *prometheus.CounterVec

	// observeMu serialises Observe, which owns cpu and since.
	observeMu sync.Mutex
	cpu       cpuTotals
	since     badgeSince

	mu     sync.RWMutex
	view   *model.View
	sum    *summary
	lastOK time.Time
	// lastTook is how long the last good scan took.
	lastTook time.Duration
	lastErr  error
}

// New builds an exporter over src and registers its metrics, the Go
// runtime's and the process's, and opts.Collectors on a registry of its own.
// src may be nil for a caller that scans itself and calls Observe.
func New(src Source, opts Options) (*Exporter, error) {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.PerSandbox && opts.PerSandboxLimit < 1 {
		return nil, fmt.Errorf("per-sandbox limit %d: must be at least 1", opts.PerSandboxLimit)
	}
	e := &Exporter{
		src:  src,
		opts: opts,
		cpu:  cpuTotals{},
		reg:  prometheus.NewRegistry(),
		scanDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sandtop_scan_duration_seconds",
			Help:    "Time taken by each scan of the host (read /proc and cgroupfs, group into sandboxes).",
			Buckets: prometheus.DefBuckets,
		}),
		scanErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandtop_scan_errors_total",
			Help: `Scans that failed, by source: "proc" (the scan failed; the last good values stay), "unix_sockets" (/proc/net/unix unreadable; socket supervisors unjudged).`,
		}, []string{"source"}),
	}
	// Both sources exist from the start, so increase() sees the first error.
	for _, s := range []string{SourceProc, SourceUnixSockets} {
		e.scanErrors.WithLabelValues(s)
	}
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "sandtop_build_info",
		Help:        "Always 1; the labels say which sandtop is serving.",
		ConstLabels: prometheus.Labels{"version": opts.Version, "goversion": runtime.Version()},
	})
	buildInfo.Set(1)
	cs := append([]prometheus.Collector{
		e.scanDuration, e.scanErrors, buildInfo, (*viewCollector)(e),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}, opts.Collectors...)
	for _, c := range cs {
		if err := e.reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return e, nil
}

// Registry is the exporter's registry: Handler serves what it gathers.
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Run scans now and then every Interval until ctx ends. It needs a Source.
func (e *Exporter) Run(ctx context.Context) error {
	if e.src == nil {
		return errors.New("exporter: Run needs a Source")
	}
	t := time.NewTicker(e.opts.Interval)
	defer t.Stop()
	for {
		e.Refresh()
		// A scan builds a new view while the last one is still live, and
		// the heap grows to twice what stays live; a daemon that sleeps
		// most of an interval gives that back now rather than holding it
		// until the next scan (about half its RSS at 10,000 processes, for
		// one collection per interval).
		debug.FreeOSMemory()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Refresh scans once through the Source and records the outcome.
func (e *Exporter) Refresh() {
	start := time.Now()
	v, err := e.src.Scan()
	e.Observe(v, err, time.Since(start))
}

// Observe records one scan made elsewhere (a caller with a scan loop of
// its own, such as the reaper): a view on success, or the error that kept
// it from being made, which keeps the last good view and counts the error.
func (e *Exporter) Observe(v *model.View, err error, took time.Duration) {
	e.observeMu.Lock()
	defer e.observeMu.Unlock()
	if err != nil || v == nil {
		if err == nil {
			err = errors.New("scan returned no view")
		}
		e.scanErrors.WithLabelValues(SourceProc).Inc()
		e.mu.Lock()
		e.lastErr = err
		e.mu.Unlock()
		return
	}
	e.scanDuration.Observe(took.Seconds())
	if v.Snapshot.Listeners == nil {
		e.scanErrors.WithLabelValues(SourceUnixSockets).Inc()
	}
	sum := summarize(v, e.opts, e.cpu, e.since.update(v))
	e.mu.Lock()
	e.view, e.sum, e.lastOK, e.lastTook, e.lastErr = v, sum, v.Time, took, nil
	e.mu.Unlock()
}

// last returns the last good view and its summary (nil before the first
// good scan), when it was taken and the error of the scan after it, if any.
func (e *Exporter) last() (*model.View, *summary, time.Time, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.view, e.sum, e.lastOK, e.lastErr
}

// staleAfter is how old the last good scan may be before /healthz says so:
// three intervals, or three scans when a scan takes longer than the
// interval (scans then run back to back, and are not late).
func (e *Exporter) staleAfter() time.Duration {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return 3 * max(e.opts.Interval, e.lastTook)
}
