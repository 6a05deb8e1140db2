package reap

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the reaper's own Prometheus series.
type Metrics struct {
	teardowns   *prometheus.CounterVec
	skipped     *prometheus.CounterVec
	candidates  *prometheus.GaugeVec
	quarantined *prometheus.GaugeVec
}

// NewMetrics makes the reaper's series; register Collectors() where they
// are served (beside serve's, on one registry).
func NewMetrics() *Metrics {
	return &Metrics{
		teardowns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandtop_reaper_teardowns_total",
			Help: "Teardowns the reaper ran, by runtime and result (ok: nothing survived and no step failed; failed: otherwise).",
		}, []string{"runtime", "result"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandtop_reaper_skipped_total",
			Help: "Selected sandboxes the reaper did not tear down in a pass, by reason (for, min-age, max, dry-run, changed, refused, stopping, quarantined).",
		}, []string{"reason"}),
		candidates: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sandtop_reaper_candidates",
			Help: "Sandboxes the reaper's selection matched in its last pass, by runtime.",
		}, []string{"runtime"}),
		quarantined: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sandtop_reaper_quarantined",
			Help: "Sandboxes the reaper has quarantined (their teardown failed --quarantine-after times in a row under the same evidence; not tried again until it changes or --retry-quarantined), by runtime.",
		}, []string{"runtime"}),
	}
}

// Collectors are the series to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.teardowns, m.skipped, m.candidates, m.quarantined}
}

func (m *Metrics) teardown(runtime string, ok bool) {
	if m == nil {
		return
	}
	result := "ok"
	if !ok {
		result = "failed"
	}
	m.teardowns.WithLabelValues(runtime, result).Inc()
}

func (m *Metrics) skip(reason string) {
	if m != nil {
		m.skipped.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) setCandidates(byRuntime map[string]int) {
	if m != nil {
		setByRuntime(m.candidates, byRuntime)
	}
}

func (m *Metrics) setQuarantined(byRuntime map[string]int) {
	if m != nil {
		setByRuntime(m.quarantined, byRuntime)
	}
}

// setByRuntime sets g to exactly byRuntime's counts.
func setByRuntime(g *prometheus.GaugeVec, byRuntime map[string]int) {
	g.Reset()
	for rt, n := range byRuntime {
		g.WithLabelValues(rt).Set(float64(n))
	}
}
