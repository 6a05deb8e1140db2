package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// timings are the phases of a run as the harness saw them from outside.
type timings struct {
	image      time.Duration
	imageBuilt bool
	kernel     time.Duration // QEMU start to systemd's first words
	boot       time.Duration // QEMU start to the suite's start
	suite      time.Duration // the suite's start to the guest's power-off
}

func (t timings) print(w io.Writer) {
	how := "cached"
	if t.imageBuilt {
		how = "built"
	}
	fmt.Fprintf(w, "testhost: phases: image %s (%s), boot to systemd %s, boot to suite %s, suite and power-off %s\n",
		t.image.Round(time.Second), how, t.kernel.Round(time.Second), t.boot.Round(time.Second), t.suite.Round(time.Second))
}

// result is one line `go test -v` prints when a test or subtest ends.
var result = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (Test[^/ ]*)(/\S+)? \(`)

// counts are one runtime's checks by outcome.
type counts struct{ pass, fail, skip int }

// print writes the guest's versions, each runtime's check counts (a
// top-level test per runtime, a subtest per check), and the suite's output
// when it failed.
func (r *run) print(w io.Writer) {
	fmt.Fprintf(w, "testhost: guest (%s):\n", r.accel)
	for _, l := range strings.Split(strings.TrimSpace(string(r.versions)), "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
	// A check is a leaf of the test tree: a runtime's checks are its
	// subtests, a runtime without subtests is one check. go test -v prints
	// a parent's result before its subtests', hence two passes.
	type outcome struct{ name, result, reason string }
	var all []outcome
	lines := strings.Split(string(r.suiteLog), "\n")
	for i, l := range lines {
		m := result.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		o := outcome{name: m[2] + m[3], result: m[1]}
		if i+1 < len(lines) && !result.MatchString(lines[i+1]) && strings.HasPrefix(lines[i+1], " ") {
			o.reason = cut(strings.TrimSpace(lines[i+1]), 200)
		}
		all = append(all, o)
	}
	byTest := map[string]*counts{}
	var order, notes []string
	for _, o := range all {
		leaf := !slices.ContainsFunc(all, func(p outcome) bool { return strings.HasPrefix(p.name, o.name+"/") })
		if !leaf {
			continue
		}
		rt := strings.TrimPrefix(strings.SplitN(o.name, "/", 2)[0], "Test")
		if byTest[rt] == nil {
			byTest[rt] = &counts{}
			order = append(order, rt)
		}
		c := byTest[rt]
		switch o.result {
		case "PASS":
			c.pass++
		case "FAIL":
			c.fail++
			notes = append(notes, "  FAIL "+o.name+": "+o.reason)
		case "SKIP":
			c.skip++
			notes = append(notes, "  SKIP "+o.name+": "+o.reason)
		}
	}
	fmt.Fprintf(w, "testhost: checks per runtime (pass/fail/skip):\n")
	for _, n := range order {
		c := byTest[n]
		fmt.Fprintf(w, "  %-12s %3d pass %3d fail %3d skip\n", n, c.pass, c.fail, c.skip)
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	if r.status != "0" {
		fmt.Fprintf(w, "testhost: the guest suite's output:\n%s\n", r.suiteLog)
	}
}

// verdict fails the run unless the suite ran to its end and passed.
func (r *run) verdict() error {
	switch r.status {
	case "0":
		return nil
	case "":
		return fmt.Errorf("the guest suite did not finish (no exit status came back); console:\n%s", r.console)
	default:
		return fmt.Errorf("the guest suite failed (exit status %s)", r.status)
	}
}

// leftovers checks that the run left nothing: the QEMU process is gone,
// the scratch directory (9p shares, console) removed, and no mount names
// it or the image cache (the image build mounts only in a private mount
// namespace).
func (r *run) leftovers() error {
	if r.pid > 0 {
		if cmd, err := os.ReadFile("/proc/" + strconv.Itoa(r.pid) + "/cmdline"); err == nil && bytes.Contains(cmd, []byte(r.scratch)) {
			return fmt.Errorf("QEMU pid %d still runs", r.pid)
		}
	}
	if _, err := os.Stat(r.scratch); err == nil {
		return fmt.Errorf("scratch directory %s left behind", r.scratch)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	for _, l := range strings.Split(string(mi), "\n") {
		if strings.Contains(l, r.scratch) || strings.Contains(l, "sandtop-testhost") {
			return fmt.Errorf("mount left behind: %s", l)
		}
	}
	return nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
