package main

import (
	"strings"
	"testing"
)

// The report reads `go test -v` output as the suite writes it (this one
// from a go1.26 test binary with parallel tests and a timeout): a
// runtime's checks are its leaf subtests, a runtime without subtests
// counts once, each failed or skipped check is listed with the first line
// it logged (parallel tests interleave), each runtime with its time, and
// the tests a timeout cut short.
func TestReportCounts(t *testing.T) {
	log := `=== RUN   TestDocker
=== PAUSE TestDocker
=== RUN   TestLXC
=== PAUSE TestLXC
=== RUN   TestRunc
=== PAUSE TestRunc
=== RUN   TestPods
=== PAUSE TestPods
=== CONT  TestDocker
=== RUN   TestDocker/running
=== RUN   TestDocker/running/kill
=== CONT  TestPods
=== RUN   TestPods/burstable
=== CONT  TestRunc
=== CONT  TestLXC
=== RUN   TestLXC/running
=== RUN   TestLXC/running/found
    x_test.go:5: lxc log
        line2
--- PASS: TestLXC (0.00s)
    --- PASS: TestLXC/running (0.00s)
        --- PASS: TestLXC/running/found (0.00s)
=== NAME  TestDocker/running/kill
    x_test.go:4: sandtop bug, issue 22 (x): container init 12 still alive:
        docker:abc cgroup
=== RUN   TestDocker/running/runtime
--- FAIL: TestDocker (61.40s)
    --- FAIL: TestDocker/running (0.10s)
        --- FAIL: TestDocker/running/kill (0.10s)
        --- PASS: TestDocker/running/runtime (0.00s)
=== NAME  TestRunc
    x_test.go:6: no runc
--- SKIP: TestRunc (0.21s)
panic: test timed out after 2s
	running tests:
		TestPods (2s)
		TestPods/burstable (2s)

goroutine 6 [running]:
`
	r := &run{suiteLog: []byte(log), status: "2", accel: "tcg"}
	var out strings.Builder
	r.print(&out)
	got := out.String()
	for _, want := range []string{
		"Docker           1 pass   1 fail   0 skip  1m1s",
		"LXC              1 pass   0 fail   0 skip  0s",
		"Runc             0 pass   0 fail   1 skip  0s",
		"FAIL TestDocker/running/kill: sandtop bug, issue 22 (x): container init 12 still alive:\n",
		"SKIP TestRunc: no runc\n",
		"DID NOT FINISH TestPods/burstable (2s)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}
