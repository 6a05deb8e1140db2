package exporter

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandtop/sandtop/model"
)

func get(t *testing.T, h http.Handler, method, path string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHandlerEndpoints(t *testing.T) {
	e, err := New(nil, Options{Interval: time.Second, Runtimes: []string{"vm0"}})
	if err != nil {
		t.Fatal(err)
	}
	h := e.Handler()

	// Before the first good scan: metrics answer (without sandbox
	// counts), the document and the health check do not.
	if r := get(t, h, "GET", "/metrics"); r.StatusCode != 200 || strings.Contains(body(t, r), "sandtop_sandboxes{") {
		t.Errorf("/metrics before a scan: %d, or it reported sandbox counts", r.StatusCode)
	}
	for _, p := range []string{"/api/v1/sandboxes", "/healthz"} {
		if r := get(t, h, "GET", p); r.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s before a scan: %d, want 503", p, r.StatusCode)
		}
	}

	v := demoView()
	v.Time = time.Now()
	e.Observe(v, nil, 10*time.Millisecond)

	t.Run("metrics negotiation", func(t *testing.T) {
		for accept, want := range map[string]string{
			"":                                 "text/plain; version=0.0.4",
			"text/plain":                       "text/plain; version=0.0.4",
			"application/openmetrics-text":     "application/openmetrics-text; version=",
			"application/openmetrics-text;q=1": "application/openmetrics-text; version=",
		} {
			r := get(t, h, "GET", "/metrics", "Accept", accept)
			b := body(t, r)
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, want) {
				t.Errorf("Accept %q: Content-Type %q, want %q…", accept, ct, want)
			}
			if !strings.Contains(b, `sandtop_sandboxes{runtime="vm0"} 3`) {
				t.Errorf("Accept %q: no sandtop_sandboxes in\n%s", accept, b)
			}
			if strings.HasPrefix(want, "application/openmetrics") != strings.HasSuffix(b, "# EOF\n") {
				t.Errorf("Accept %q: body ends %q", accept, b[max(0, len(b)-20):])
			}
		}
	})

	t.Run("document", func(t *testing.T) {
		for path, all := range map[string]bool{"/api/v1/sandboxes": false, "/api/v1/sandboxes?all=1": true, "/api/v1/sandboxes?all=0": false} {
			var want bytes.Buffer
			if err := v.Document(all).Encode(model.JSONSafe(&want)); err != nil {
				t.Fatal(err)
			}
			r := get(t, h, "GET", path)
			if got := body(t, r); r.StatusCode != 200 || got != want.String() {
				t.Errorf("%s: %d\n%s\nwant the list --json document\n%s", path, r.StatusCode, got, want.String())
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s: Content-Type %q", path, ct)
			}
		}
		if r := get(t, h, "GET", "/api/v1/sandboxes?all=maybe"); r.StatusCode != http.StatusBadRequest || !strings.Contains(body(t, r), "all:") {
			t.Errorf("all=maybe: %d, want 400 naming the parameter", r.StatusCode)
		}
		// The usual spellings of a boolean, in any case.
		var plain, all bytes.Buffer
		if err := v.Document(false).Encode(&plain); err != nil {
			t.Fatal(err)
		}
		if err := v.Document(true).Encode(&all); err != nil {
			t.Fatal(err)
		}
		for q, want := range map[string]*bytes.Buffer{"all=true": &all, "all=TRUE": &all, "all=yes": &all, "all=on": &all, "all=t": &all,
			"all": &all, "all=": &all, "all=false": &plain, "all=No": &plain, "all=off": &plain, "all=f": &plain, "other=1": &plain} {
			if r := get(t, h, "GET", "/api/v1/sandboxes?"+q); r.StatusCode != 200 || body(t, r) != want.String() {
				t.Errorf("?%s: %d, or not the document it asks for", q, r.StatusCode)
			}
		}
	})

	t.Run("index", func(t *testing.T) {
		r := get(t, h, "GET", "/")
		b := body(t, r)
		if r.StatusCode != 200 || r.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("GET /: %d %s", r.StatusCode, r.Header.Get("Content-Type"))
		}
		// Every endpoint is named, and the counts are the view's (vm0: 3
		// sandboxes, 2 orphans, 1 with zombies, 9 processes).
		for _, want := range []string{`href="metrics"`, `href="api/v1/sandboxes"`, `href="healthz"`, "sandtop kill",
			"<td>vm0</td><td>3</td><td>2</td><td>1</td><td>0</td><td>0</td><td>0</td><td>0</td><td>0</td><td>9</td>", "7 processes in no sandbox"} {
			if !strings.Contains(b, want) {
				t.Errorf("GET / lacks %q:\n%s", want, b)
			}
		}
	})

	t.Run("healthz", func(t *testing.T) {
		if r := get(t, h, "GET", "/healthz"); r.StatusCode != 200 || !strings.HasPrefix(body(t, r), "ok") {
			t.Errorf("/healthz after a good scan: %d", r.StatusCode)
		}
		if r := get(t, h, "HEAD", "/healthz"); r.StatusCode != 200 {
			t.Errorf("HEAD /healthz: %d", r.StatusCode)
		}
		// Scans that take longer than the interval run back to back: a
		// scan 5 s old is not late when scans take 3 s.
		slow := demoView()
		slow.Time = time.Now().Add(-5 * time.Second)
		e.Observe(slow, nil, 3*time.Second)
		if r := get(t, h, "GET", "/healthz"); r.StatusCode != 200 {
			t.Errorf("/healthz 5 s after a 3 s scan (interval 1s): %d, want 200", r.StatusCode)
		}
		old := demoView()
		old.Time = time.Now().Add(-time.Minute)
		e.Observe(old, nil, 0)
		e.Observe(nil, io.ErrUnexpectedEOF, 0)
		r := get(t, h, "GET", "/healthz")
		if b := body(t, r); r.StatusCode != http.StatusServiceUnavailable || !strings.Contains(b, "unexpected EOF") {
			t.Errorf("/healthz a minute after the last good scan (interval 1s): %d %q, want 503 with the error", r.StatusCode, b)
		}
	})

	t.Run("nothing else", func(t *testing.T) {
		for _, p := range []string{"/index.html", "/metrics/", "/api/v1/sandboxes/x", "/api/v1", "/debug/pprof/", "/kill"} {
			if r := get(t, h, "GET", p); r.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404", p, r.StatusCode)
			}
		}
		for _, p := range Paths {
			for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
				r := get(t, h, m, p)
				if r.StatusCode != http.StatusMethodNotAllowed {
					t.Errorf("%s %s: %d, want 405", m, p, r.StatusCode)
				}
				if allow := r.Header.Get("Allow"); !strings.Contains(allow, "GET") || strings.Contains(allow, m) {
					t.Errorf("%s %s: Allow %q", m, p, allow)
				}
			}
		}
	})
}

// A caller (the reaper) adds its collectors and feeds views it scanned
// itself; the handler serves both sets of metrics.
func TestExtraCollectorsAndObserve(t *testing.T) {
	reaped := prometheus.NewCounter(prometheus.CounterOpts{Name: "sandtop_reaper_test_total", Help: "test"})
	reaped.Add(3)
	e, err := New(nil, Options{Collectors: []prometheus.Collector{reaped}})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(demoView(), nil, time.Millisecond)
	b := body(t, get(t, e.Handler(), "GET", "/metrics"))
	for _, want := range []string{"sandtop_reaper_test_total 3", `sandtop_sandboxes{runtime="vm0"} 3`, "sandtop_scan_duration_seconds_count 1", "process_resident_memory_bytes", "go_goroutines"} {
		if !strings.Contains(b, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if err := e.Run(t.Context()); err == nil {
		t.Error("Run without a Source: no error")
	}
	if _, err := New(nil, Options{Collectors: []prometheus.Collector{reaped, reaped}}); err == nil {
		t.Error("a collector registered twice: no error")
	}
}

// The exporter is read-only by construction: nothing it links can reach
// the teardown engine.
func TestNoTeardownDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps printed %d packages: proved nothing", len(deps))
	}
	for _, d := range deps {
		if strings.HasSuffix(d, "sandtop/teardown") || strings.HasSuffix(d, "sandtop/ui") {
			t.Errorf("the exporter depends on %s", d)
		}
	}
}

// countingSource counts scans.
type countingSource struct{ n int }

func (c *countingSource) Scan() (*model.View, error) {
	c.n++
	return demoView(), nil
}

// A scrape reads the last view: however many scrapes and document reads
// arrive, only the exporter's own loop scans.
func TestScrapeNeverScans(t *testing.T) {
	src := &countingSource{}
	e, err := New(src, Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	e.Refresh()
	h := e.Handler()
	for range 10 {
		for _, p := range Paths {
			get(t, h, "GET", p)
		}
	}
	if src.n != 1 {
		t.Errorf("%d scans after 30 requests, want the 1 Refresh made", src.n)
	}
}

// The document is what `list --json` prints, and a terminal may show it
// (curl): a C1 CSI or a bidi override a process put in its ID is escaped,
// and decodes to the same ID.
func TestSandboxesDocumentIsTerminalSafe(t *testing.T) {
	e, err := New(nil, Options{Interval: time.Second, Runtimes: []string{"vm0"}})
	if err != nil {
		t.Fatal(err)
	}
	v := demoView()
	v.Time = time.Now()
	const hostile = "a\u009b31mb\u202ec\x7f"
	v.Sandboxes[0].ID = hostile
	e.Observe(v, nil, 10*time.Millisecond)
	b := body(t, get(t, e.Handler(), "GET", "/api/v1/sandboxes"))
	if strings.ContainsAny(b, "\u009b\u202e\x7f") {
		t.Errorf("raw control or format characters in the document:\n%s", b)
	}
	var doc struct {
		Sandboxes []struct {
			ID string `json:"id"`
		} `json:"sandboxes"`
	}
	if err := json.Unmarshal([]byte(b), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sb := range doc.Sandboxes {
		found = found || sb.ID == hostile
	}
	if !found {
		t.Errorf("the hostile ID does not decode as it was: %+v", doc.Sandboxes)
	}
}
