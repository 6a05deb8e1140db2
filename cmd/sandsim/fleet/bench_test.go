package fleet

import (
	"testing"
	"time"
)

// BenchmarkStartClose measures how long a fleet takes to start (every
// process ready, post-start actions done) and to close (everything killed,
// reaped and removed), reported as start-ms/op and close-ms/op.
func BenchmarkStartClose(b *testing.B) {
	for _, name := range []string{"demo", "bulk:1000"} {
		b.Run(name, func(b *testing.B) {
			spec, err := Scenario(name)
			if err != nil {
				b.Fatal(err)
			}
			var start, stop time.Duration
			for b.Loop() {
				t0 := time.Now()
				f, err := Start(b.Context(), spec, Options{Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
				start += t1.Sub(t0)
				stop += time.Since(t1)
			}
			b.ReportMetric(float64(start.Milliseconds())/float64(b.N), "start-ms/op")
			b.ReportMetric(float64(stop.Milliseconds())/float64(b.N), "close-ms/op")
		})
	}
}
