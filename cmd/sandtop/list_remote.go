package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/ui/format"
	"github.com/sandtop/sandtop/ui/theme"
)

// readOnlyNote ends every view of another host: the answer of a remote
// read, and nothing a remote view shows can be killed from here.
const readOnlyNote = "read-only: no signal crosses the network; to tear a sandbox down, run `sandtop kill ID` on its host"

// remoteTimeout bounds one request to another host or to Prometheus.
const remoteTimeout = 30 * time.Second

// isURL reports whether --from names a host (http:// or https://) rather
// than a recording.
func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// parseBaseURL checks a URL a flag gives: http or https, a host, no query.
func parseBaseURL(flag, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, usageErr(fmt.Errorf("%s %q: want an http:// or https:// URL, as in http://worker-1:9717", flag, s))
	}
	return u, nil
}

// getJSON fetches u and decodes its JSON body into into.
func getJSON(ctx context.Context, u string, into any) error {
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, model.Printable(strings.TrimSpace(string(b))))
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// parseFilter reads the filter terms given as arguments (the live
// screen's filter language).
func parseFilter(args []string) (query.Query, error) {
	q, err := query.Parse(strings.Join(args, " "))
	if err != nil {
		return q, usageErr(fmt.Errorf("filter: %w", err))
	}
	return q, nil
}

// fromHost reads one host's `sandtop serve` document (/api/v1/sandboxes),
// keeping the sandboxes the filter passes.
func fromHost(ctx context.Context, base *url.URL, all bool, q query.Query) (model.Document, error) {
	u := *base
	if !strings.HasSuffix(u.Path, "/api/v1/sandboxes") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/sandboxes"
	}
	if all {
		u.RawQuery = "all=1"
	}
	var d model.Document
	if err := getJSON(ctx, u.String(), &d); err != nil {
		return d, fmt.Errorf("--from: %w", err)
	}
	kept := d.Sandboxes[:0]
	for _, sb := range d.Sandboxes {
		if q.Sandbox(documentSandbox(sb)) {
			kept = append(kept, sb)
		}
	}
	d.Sandboxes = kept
	return d, nil
}

// documentSandbox is as much of a model.Sandbox as a document says, for
// the filter to judge: ID, runtime, badges and the members' comm and argv.
func documentSandbox(s model.SandboxJSON) *model.Sandbox {
	sb := &model.Sandbox{ID: s.ID, Runtime: s.Runtime, Namespace: s.Namespace, Badges: s.Badges}
	for _, p := range s.Processes {
		sb.Members = append(sb.Members, &model.Member{Process: &proc.Process{PID: p.PID, Comm: p.Comm, Argv: p.Argv}})
	}
	return sb
}

// writeFromHost prints a host's document as `sandtop list` prints this
// host: every cell escaped, for the other host's processes chose them.
func writeFromHost(w io.Writer, st *theme.Theme, d model.Document, source string, width int) {
	var rows [][]string
	for _, sb := range d.Sandboxes {
		var cpu float64
		var rss uint64
		var start time.Time
		for _, p := range sb.Processes {
			cpu += p.CPUSeconds
			rss += p.RSSBytes
			if p.PID == sb.RootPID {
				start = p.StartTime
			}
		}
		root, age := "-", "-"
		if sb.RootPID != 0 {
			root = fmt.Sprint(sb.RootPID)
		}
		if !start.IsZero() {
			age = format.Age(d.Time.Sub(start))
		}
		rows = append(rows, []string{sb.ID, sb.Runtime, fmt.Sprint(len(sb.Processes)), root,
			format.CPUTime(cpu), format.Bytes(rss), age, badgeList(sb.Badges)})
	}
	writeRemoteTable(w, st, []string{"ID", "RUNTIME", "PROCS", "ROOT PID", "CPU", "RSS", "AGE", "BADGES"}, rows,
		func(c int) bool { return c >= 2 && c <= 6 }, width)
	fmt.Fprintf(w, "%d sandboxes on %s, scanned %s (from %s)\n%s\n", len(d.Sandboxes), model.Printable(d.Host),
		d.Time.Format(time.RFC3339), model.Printable(source), readOnlyNote)
}

func badgeList(bs []model.Badge) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = string(b)
	}
	return strings.Join(s, ",")
}

// writeRemoteTable prints rows under headers, every cell escaped.
func writeRemoteTable(w io.Writer, st *theme.Theme, headers []string, rows [][]string, numeric func(int) bool, width int) {
	for _, row := range rows {
		for c, cell := range row {
			row[c] = model.Printable(cell)
		}
	}
	lines, ok := []string(nil), false
	if st.Plain {
		lines, ok = plainTable(headers, rows, numeric)
	}
	if !ok {
		lines = tableLines(st.Renderer(), headers, rows, numeric)
	}
	writeLines(w, lines, width)
}

var errNoSeries = errors.New("no sandtop series in this Prometheus: is a job scraping `sandtop serve`?")
