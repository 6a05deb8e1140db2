package exporter

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDocsMetricsTable holds the metrics table of docs/serve.md to what
// the exporter serves with --per-sandbox over a view that has every kind
// of series: each sandtop_ metric has its row, and each row a metric.
func TestDocsMetricsTable(t *testing.T) {
	e, err := New(nil, Options{Runtimes: []string{"vm0"}, PerSandbox: true, PerSandboxLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(demoView(), nil, time.Millisecond)
	families, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var served []string
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
			t.Errorf("metric %s is served but docs/serve.md's table has no row for it", name)
		}
	}
	for _, name := range documented {
		if !slices.Contains(served, name) {
			t.Errorf("docs/serve.md's table has a row for %s, which serve does not export", name)
		}
	}
}
