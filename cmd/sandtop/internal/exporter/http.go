package exporter

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sandtop/sandtop/model"
)

// Paths are the endpoints Handler serves, all read-only (GET and HEAD);
// any other path is 404 and any other method 405.
var Paths = []string{"/", "/metrics", "/api/v1/sandboxes", "/healthz"}

// Handler serves:
//
//   - /: a page for a human: the endpoints and the last scan's counts;
//   - /metrics: the registry, as Prometheus text or OpenMetrics, whichever
//     the scraper's Accept header prefers;
//   - /api/v1/sandboxes: the last good view as the `sandtop list --json`
//     document (?all=1 as `--all`, or any of ParseBool's spellings), 503
//     before the first good scan;
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
	mux.HandleFunc("GET /{$}", e.serveIndex)
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
	q := r.URL.Query()
	all, err := ParseBool(q.Get("all"), q.Has("all"))
	if err != nil {
		http.Error(w, "all: "+err.Error(), http.StatusBadRequest)
		return
	}
	// A terminal may show the answer (curl): what the processes chose
	// is escaped as `list --json` escapes it.
	var buf bytes.Buffer
	if err := v.Document(all).Encode(model.JSONSafe(&buf)); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}

// ParseBool reads a boolean query parameter the ways people write one:
// 1, t, true, y, yes, on and 0, f, false, n, no, off, in any case. A
// parameter given with no value (?all) is true; one not given is false.
func ParseBool(v string, given bool) (bool, error) {
	switch strings.ToLower(v) {
	case "":
		return given, nil
	case "1", "t", "true", "y", "yes", "on":
		return true, nil
	case "0", "f", "false", "n", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean: want 1/true/yes/on or 0/false/no/off", v)
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
