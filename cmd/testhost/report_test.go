package main

import (
	"strings"
	"testing"
)

// The counts come from `go test -v` output: a runtime's checks are its
// subtests (not the runtime's own line), a runtime without subtests counts
// once, and each skipped or failed check is listed with its reason.
func TestReportCounts(t *testing.T) {
	log := `=== RUN   TestDocker
=== RUN   TestDocker/running
=== RUN   TestDocker/running/runtime
=== RUN   TestDocker/running/kill
    host_test.go:10: container init 12 still alive
--- FAIL: TestDocker (3.00s)
    --- FAIL: TestDocker/running (3.00s)
        --- PASS: TestDocker/running/runtime (0.00s)
        --- FAIL: TestDocker/running/kill (2.00s)
            host_test.go:10: container init 12 still alive
=== RUN   TestLXC
--- SKIP: TestLXC/running/found (0.00s)
    host_test.go:20: KNOWN (lxc): no sandbox st-lxc-running
--- PASS: TestLXC (1.00s)
=== RUN   TestRunc
--- PASS: TestRunc (1.00s)
FAIL
`
	r := &run{suiteLog: []byte(log), status: "1", accel: "tcg"}
	var out strings.Builder
	r.print(&out)
	got := out.String()
	for _, want := range []string{
		"Docker         1 pass   1 fail   0 skip",
		"LXC            0 pass   0 fail   1 skip",
		"Runc           1 pass   0 fail   0 skip",
		"FAIL TestDocker/running/kill: host_test.go:10: container init 12 still alive",
		"SKIP TestLXC/running/found: host_test.go:20: KNOWN (lxc): no sandbox st-lxc-running",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}
