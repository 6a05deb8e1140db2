// Command skipreport reads `go test -json` on stdin and prints what a
// plain `go test` prints (each package's result, and the output of every
// test that failed), then the list of tests that skipped, each with its
// reason, so that a run says what it did not test. `make test` pipes the
// tests through it.
//
// It exits 1 when a test or a package failed (or the stream is not
// `go test -json`), else 0.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// skip is one skipped test and why.
type skip struct {
	pkg, test, reason string
}

func main() {
	skips, failed, err := report(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "skipreport:", err)
		os.Exit(1)
	}
	writeSkips(os.Stdout, skips)
	if failed {
		os.Exit(1)
	}
}

// report copies the package results and failing tests' output to w as
// they come, and returns the skips and whether anything failed.
func report(r io.Reader, w io.Writer) (skips []skip, failed bool, err error) {
	type key struct{ pkg, test string }
	held := map[key][]string{} // output of tests still running
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Action == "" {
			// Not an event (a build error printed around the stream):
			// pass it on as go test would.
			fmt.Fprintln(w, string(line))
			continue
		}
		k := key{ev.Package, ev.Test}
		switch {
		case ev.Action == "output" && ev.Test != "":
			held[k] = append(held[k], ev.Output)
		case ev.Action == "output":
			// Package level: the ok/FAIL lines, panics, build errors. The
			// bare PASS a verbose run prints is noise here.
			if ev.Output != "PASS\n" && !strings.HasPrefix(ev.Output, "=== ") {
				fmt.Fprint(w, ev.Output)
			}
		case ev.Action == "build-output":
			fmt.Fprint(w, ev.Output)
		case ev.Test != "" && (ev.Action == "pass" || ev.Action == "skip" || ev.Action == "fail"):
			out := held[k]
			delete(held, k)
			switch ev.Action {
			case "fail":
				failed = true
				for _, o := range out {
					if !strings.HasPrefix(o, "=== ") {
						fmt.Fprint(w, o)
					}
				}
			case "skip":
				skips = append(skips, skip{ev.Package, ev.Test, skipReason(out)})
			}
		case ev.Test == "" && (ev.Action == "fail" || ev.Action == "build-fail"):
			failed = true
		}
	}
	return skips, failed, sc.Err()
}

// skipReason is what a skipped test logged, without the === and --- lines
// and file:line prefixes' indentation: the reason it gave t.Skip.
func skipReason(out []string) string {
	var lines []string
	for _, o := range out {
		o = strings.TrimRight(o, "\n")
		t := strings.TrimSpace(o)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		lines = append(lines, t)
	}
	if len(lines) == 0 {
		return "(no reason given)"
	}
	return strings.Join(lines, " / ")
}

// writeSkips lists the skips, by package and test.
func writeSkips(w io.Writer, skips []skip) {
	if len(skips) == 0 {
		fmt.Fprintln(w, "no test skipped")
		return
	}
	slices.SortFunc(skips, func(a, b skip) int {
		return strings.Compare(a.pkg+" "+a.test, b.pkg+" "+b.test)
	})
	noun := "tests"
	if len(skips) == 1 {
		noun = "test"
	}
	fmt.Fprintf(w, "%d %s skipped:\n", len(skips), noun)
	for _, s := range skips {
		fmt.Fprintf(w, "  SKIP %s %s: %s\n", strings.TrimPrefix(s.pkg, "github.com/sandtop/sandtop/"), s.test, s.reason)
	}
}
