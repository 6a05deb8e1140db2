package main

import (
	"strings"
	"testing"
)

// TestReport feeds a go test -json stream of a passing, a skipping and a
// failing test: only the failure's output is printed, the skip is listed
// with its reason, and the run counts as failed.
func TestReport(t *testing.T) {
	stream := `{"Action":"run","Package":"p","Test":"TestOK"}
{"Action":"output","Package":"p","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"p","Test":"TestOK","Output":"    ok_test.go:9: chatter\n"}
{"Action":"pass","Package":"p","Test":"TestOK"}
{"Action":"output","Package":"p","Test":"TestRoot","Output":"=== RUN   TestRoot\n"}
{"Action":"output","Package":"p","Test":"TestRoot","Output":"    root_test.go:12: needs root\n"}
{"Action":"output","Package":"p","Test":"TestRoot","Output":"--- SKIP: TestRoot (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestRoot"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"    bad_test.go:3: want 1, got 2\n"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}
{"Action":"fail","Package":"p"}
`
	var out strings.Builder
	skips, failed, err := report(strings.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Errorf("a failed test did not fail the report")
	}
	want := "    bad_test.go:3: want 1, got 2\n--- FAIL: TestBad (0.00s)\nFAIL\tp\t0.01s\n"
	if out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	if len(skips) != 1 || skips[0].test != "TestRoot" || skips[0].reason != "root_test.go:12: needs root" {
		t.Errorf("skips %+v", skips)
	}
	var list strings.Builder
	writeSkips(&list, skips)
	if got := list.String(); got != "1 test skipped:\n  SKIP p TestRoot: root_test.go:12: needs root\n" {
		t.Errorf("skip list %q", got)
	}
}
