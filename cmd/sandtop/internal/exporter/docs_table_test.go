package exporter

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/reap"
)

// TestDocsMetricsTable holds the metrics table of docs/serve.md to what
// the exporter serves with --per-sandbox over a view that has every kind
// of series, with the reaper's metrics beside them as `reap --listen`
// serves them: each sandtop_ metric has its row, and each row a metric.
func TestDocsMetricsTable(t *testing.T) {
	reaper := reap.NewMetrics()
	e, err := New(nil, Options{Runtimes: []string{"vm0"}, PerSandbox: true, PerSandboxLimit: 10, Collectors: reaper.Collectors()})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(demoView(), nil, time.Millisecond)
	families, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	// The reaper's vectors have no series until it acts: their names come
	// from their descriptors.
	descs := make(chan *prometheus.Desc, 64)
	for _, c := range reaper.Collectors() {
		c.Describe(descs)
	}
	close(descs)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			served = append(served, m[1])
		}
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "sandtop_") {
			served = append(served, f.GetName())
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "serve.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(sandtop_[a-z_]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		documented = append(documented, m[1])
	}
	if len(documented) == 0 {
		t.Fatal("docs/serve.md has no metrics table")
	}
	for _, name := range served {
		if !slices.Contains(documented, name) {
			t.Errorf("metric %s is exported but docs/serve.md's table has no row for it", name)
		}
	}
	for _, name := range documented {
		if !slices.Contains(served, name) {
			t.Errorf("docs/serve.md's table has a row for %s, which neither serve nor the reaper exports", name)
		}
	}
}
