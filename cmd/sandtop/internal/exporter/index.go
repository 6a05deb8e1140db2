package exporter

import (
	"bytes"
	"html/template"
	"net/http"
	"os"
	"time"

	"github.com/sandtop/sandtop/model"
)

// indexPage is what a person who opens serve's address in a browser, or
// curls it, reads: what this is, where the data is, and the host's counts
// as of the last scan. html/template escapes every value (the host name
// and the runtime names come from the host and the rules files).
var indexPage = template.Must(template.New("index").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>sandtop serve on {{.Host}}</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{padding:.2em .8em;text-align:right}td:first-child,th:first-child{text-align:left}</style>
</head><body>
<h1>sandtop serve on {{.Host}}</h1>
<p>sandtop {{.Version}}: a read-only exporter of this host's sandboxes. No endpoint can signal a
process: to tear a sandbox down, run <code>sandtop kill</code> on this host.</p>
<ul>
<li><a href="metrics">/metrics</a>: Prometheus metrics (text or OpenMetrics)</li>
<li><a href="api/v1/sandboxes">/api/v1/sandboxes</a>: the <code>sandtop list --json</code> document
(<a href="api/v1/sandboxes?all=1">?all=1</a> adds the processes in no sandbox);
<code>sandtop list --from URL</code> prints it</li>
<li><a href="healthz">/healthz</a>: 200 while scans succeed</li>
</ul>
{{if .Scanned}}<p>Last good scan {{.Scanned}} ({{.Age}} ago), every {{.Interval}}.{{if .Err}} The scans since failed: {{.Err}}{{end}}</p>
<table><tr><th>runtime</th><th>sandboxes</th>{{range .Badges}}<th>{{.}}</th>{{end}}<th>processes</th></tr>
{{range .Rows}}<tr><td>{{.Runtime}}</td><td>{{.Sandboxes}}</td>{{range .Badged}}<td>{{.}}</td>{{end}}<td>{{.Processes}}</td></tr>
{{end}}</table>
<p>{{.Unattributed}} processes in no sandbox{{if .Unreadable}}; {{.Unreadable}} partly unreadable{{end}}.</p>
{{else}}<p>No scan has succeeded yet{{if .Err}}: {{.Err}}{{end}}.</p>{{end}}
</body></html>
`))

type indexRow struct {
	Runtime              string
	Sandboxes, Processes int
	Badged               []int
}

func (e *Exporter) serveIndex(w http.ResponseWriter, _ *http.Request) {
	v, s, at, err := e.last()
	host, _ := os.Hostname()
	data := struct {
		Host, Version, Scanned, Age, Interval string
		Err                                   error
		Badges                                []model.Badge
		Rows                                  []indexRow
		Unattributed, Unreadable              int
	}{Host: host, Version: e.opts.Version, Err: err, Badges: model.Badges, Interval: e.opts.Interval.String()}
	if v != nil {
		if v.Host != "" {
			data.Host = v.Host
		}
		data.Scanned = at.Format(time.RFC3339)
		data.Age = time.Since(at).Round(time.Second).String()
		data.Unattributed, data.Unreadable = s.unattributed, s.unreadable
		for _, rt := range s.runtimes {
			n := s.byRuntime[rt]
			data.Rows = append(data.Rows, indexRow{Runtime: rt, Sandboxes: n.sandboxes, Processes: n.processes, Badged: n.badged})
		}
	}
	var buf bytes.Buffer
	if err := indexPage.Execute(&buf, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}
