package proc

import "testing"

// BenchmarkScan is a cold scan, as `sandtop list` does once: a new scanner
// (mountinfo, btime) and every static file of every process.
func BenchmarkScan(b *testing.B) {
	b.ReportAllocs()
	procs := 0
	for b.Loop() {
		s, err := NewScanner(Options{})
		if err != nil {
			b.Fatal(err)
		}
		snap, err := s.Scan()
		if err != nil {
			b.Fatal(err)
		}
		procs = len(snap.Procs)
		s.Close()
	}
	b.ReportMetric(float64(procs), "procs")
}

// BenchmarkScanSteady is a refresh of the watch loop: one scanner, so known
// identities cost a stat read each.
func BenchmarkScanSteady(b *testing.B) {
	b.ReportAllocs()
	s, err := NewScanner(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Scan(); err != nil {
		b.Fatal(err)
	}
	procs := 0
	for b.Loop() {
		snap, err := s.Scan()
		if err != nil {
			b.Fatal(err)
		}
		procs = len(snap.Procs)
	}
	b.ReportMetric(float64(procs), "procs")
}
