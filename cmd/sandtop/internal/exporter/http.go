package exporter

import (
	"bytes"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Paths are the endpoints Handler serves, all read-only (GET and HEAD);
// any other path is 404 and any other method 405.
var Paths = []string{"/metrics", "/api/v1/sandboxes", "/healthz"}

// Handler serves:
//
//   - /metrics: the registry, as Prometheus text or OpenMetrics, whichever
//     the scraper's Accept header prefers;
//   - /api/v1/sandboxes: the last good view as the `sandtop list --json`
//     document (?all=1 as `--all`), 503 before the first good scan;
//   - /healthz: 200 while a scan has succeeded within three intervals
//     (three scans, if a scan takes longer), 503 (with the reason)
//     otherwise.
func (e *Exporter) Handler() http.Handler {
	mux := http.NewServeMux()
	metrics := promhttp.InstrumentMetricHandler(e.reg, promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{
		EnableOpenMetrics: true,
		Registry:          e.reg,
	}))
	// A "GET" pattern also answers HEAD, and the mux answers other methods
	// with 405 and an Allow header, and other paths with 404.
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("GET /api/v1/sandboxes", e.serveSandboxes)
	mux.HandleFunc("GET /healthz", e.serveHealth)
	return mux
}

func (e *Exporter) serveSandboxes(w http.ResponseWriter, r *http.Request) {
	v, _, _, err := e.last()
	if v == nil {
		msg := "no scan has succeeded yet"
		if err != nil {
			msg += ": " + err.Error()
		}
		http.Error(w, msg, http.StatusServiceUnavailable)
		return
	}
	all := false
	switch r.URL.Query().Get("all") {
	case "", "0", "false":
	case "1", "true":
		all = true
	default:
		http.Error(w, "all: want 1 or 0", http.StatusBadRequest)
		return
	}
	var buf bytes.Buffer
	if err := v.Document(all).Encode(&buf); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}

func (e *Exporter) serveHealth(w http.ResponseWriter, _ *http.Request) {
	_, _, at, err := e.last()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch age := time.Since(at); {
	case at.IsZero():
		msg := "no scan has succeeded yet"
		if err != nil {
			msg += ": " + err.Error()
		}
		http.Error(w, msg, http.StatusServiceUnavailable)
	case age > e.staleAfter():
		http.Error(w, fmt.Sprintf("last good scan %s ago (interval %s): %v", age.Round(time.Second), e.opts.Interval, err), http.StatusServiceUnavailable)
	default:
		fmt.Fprintf(w, "ok: last scan %s ago\n", age.Round(time.Millisecond))
	}
}
