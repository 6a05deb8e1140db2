// Package remote reads sandboxes from elsewhere for `sandtop list`:
// another host's `sandtop serve` (--from URL) or the Prometheus that
// scrapes a fleet of them (--prometheus). It only reads: nothing here can
// signal, and every string it returns came from another host's processes,
// to be escaped before it reaches a terminal.
package remote

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
)

// ReadOnlyNote ends every view of another host: the answer of a remote
// read, and nothing a remote view shows can be killed from here.
const ReadOnlyNote = "read-only: no signal crosses the network; to tear a sandbox down, run `sandtop kill ID` on its host"

// remoteTimeout bounds one request to another host or to Prometheus.
const remoteTimeout = 30 * time.Second

// IsURL reports whether --from names a host (http:// or https://) rather
// than a recording.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// ParseBaseURL checks a URL a flag gives: http or https, a host, no query.
func ParseBaseURL(flag, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s %q: want an http:// or https:// URL, as in http://worker-1:9717", flag, model.Printable(s))
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

// FromHost reads one host's `sandtop serve` document (/api/v1/sandboxes),
// keeping the sandboxes the filter passes.
func FromHost(ctx context.Context, base *url.URL, all bool, q query.Query) (model.Document, error) {
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

var errNoSeries = errors.New("no sandtop series in this Prometheus: is a job scraping `sandtop serve`?")
