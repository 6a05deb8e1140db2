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
	suite      time.Duration // the suite's start to its end, or to the kill
	powerOff   time.Duration // the suite's end to QEMU's exit
}

// measure takes the suite's phases at QEMU's exit (or kill), given when
// the suite started and ended (zero when the console never said).
func (t *timings) measure(start, end time.Time) {
	now := time.Now()
	switch {
	case start.IsZero():
	case end.IsZero():
		t.suite = now.Sub(start)
	default:
		t.suite, t.powerOff = end.Sub(start), now.Sub(end)
	}
}

func (t timings) print(w io.Writer) {
	how := "cached"
	if t.imageBuilt {
		how = "built"
	}
	fmt.Fprintf(w, "testhost: phases: image %s (%s), boot to systemd %s, boot to suite %s, suite %s, power-off %s; load average %s\n",
		t.image.Round(time.Second), how, t.kernel.Round(time.Second), t.boot.Round(time.Second), t.suite.Round(time.Second),
		t.powerOff.Round(time.Second), loadAverage())
}

// The lines of `go test -v` the report reads: a test's output follows the
// line naming it (=== RUN, CONT or NAME: parallel tests interleave), its
// result comes at the end of its top-level test, and a suite timed out
// lists the tests still running.
var (
	testNamed   = regexp.MustCompile(`^=== (?:RUN|CONT|NAME)\s+(\S+)`)
	testResult  = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)
	testRunning = regexp.MustCompile(`^\t\t(Test\S*) \((.*)\)$`)
	logPrefix   = regexp.MustCompile(`^\S+\.go:\d+: `)
)

// outcome is one test's end.
type outcome struct {
	name, result string
	took         time.Duration
}

// suiteReport is what the guest suite's output says: every test's outcome
// in the order they ended, each test's first logged line, and the tests
// still running when its timeout fired.
type suiteReport struct {
	outcomes []outcome
	said     map[string]string
	running  []string
}

func parseSuite(log []byte) suiteReport {
	rep := suiteReport{said: map[string]string{}}
	current, timedOut := "", false
	for _, l := range strings.Split(string(log), "\n") {
		if m := testNamed.FindStringSubmatch(l); m != nil {
			current = m[1]
			continue
		}
		if m := testResult.FindStringSubmatch(l); m != nil {
			secs, _ := strconv.ParseFloat(m[3], 64)
			rep.outcomes = append(rep.outcomes, outcome{name: m[2], result: m[1], took: time.Duration(secs * float64(time.Second))})
			continue
		}
		if strings.HasPrefix(l, "panic: test timed out") {
			timedOut = true
			continue
		}
		if m := testRunning.FindStringSubmatch(l); timedOut && m != nil {
			rep.running = append(rep.running, m[1]+" ("+m[2]+")")
			continue
		}
		if text, ok := strings.CutPrefix(l, "    "); ok && current != "" && rep.said[current] == "" {
			rep.said[current] = cut(logPrefix.ReplaceAllString(strings.TrimSpace(text), ""), 300)
		}
	}
	return rep
}

// counts are one runtime's checks by outcome, and how long its test took.
type counts struct {
	pass, fail, skip int
	took             time.Duration
}

// print writes the guest's versions and boot, each runtime's check counts
// (a top-level test per runtime, a leaf subtest per check) and time, every
// failed or skipped check with its first words, what was still running at
// the suite's timeout, and the suite's whole output when it failed.
func (r *run) print(w io.Writer) {
	fmt.Fprintf(w, "testhost: guest (%s):\n", r.accel)
	for _, l := range strings.Split(strings.TrimSpace(string(r.versions)+"\n"+string(r.bootLog)), "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
	rep := parseSuite(r.suiteLog)
	byTest := map[string]*counts{}
	var order, notes []string
	for _, o := range rep.outcomes {
		top, _, sub := strings.Cut(o.name, "/")
		rt := strings.TrimPrefix(top, "Test")
		if byTest[rt] == nil {
			byTest[rt] = &counts{}
			order = append(order, rt)
		}
		c := byTest[rt]
		if !sub {
			c.took = o.took
		}
		leaf := !slices.ContainsFunc(rep.outcomes, func(p outcome) bool { return strings.HasPrefix(p.name, o.name+"/") })
		if !leaf {
			continue
		}
		switch o.result {
		case "PASS":
			c.pass++
		case "FAIL":
			c.fail++
			notes = append(notes, "  FAIL "+o.name+": "+rep.said[o.name])
		case "SKIP":
			c.skip++
			notes = append(notes, "  SKIP "+o.name+": "+rep.said[o.name])
		}
	}
	fmt.Fprintf(w, "testhost: checks per runtime (pass/fail/skip, time):\n")
	for _, n := range order {
		c := byTest[n]
		fmt.Fprintf(w, "  %-14s %3d pass %3d fail %3d skip  %s\n", n, c.pass, c.fail, c.skip, c.took.Round(time.Second))
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	for _, n := range rep.running {
		fmt.Fprintln(w, "  DID NOT FINISH "+n)
	}
	if r.status != "0" {
		fmt.Fprintf(w, "testhost: the guest suite's output:\n%s\n", r.suiteLog)
	}
	if r.status == "" && len(r.ps) > 0 {
		fmt.Fprintf(w, "testhost: the guest's processes when last seen:\n%s\n", r.ps)
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

// loadAverage is the host's 1, 5 and 15 minute load averages: the
// phases' figures depend on them (TCG is CPU-bound).
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if err != nil || len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
