package teardown

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
)

// The torture suite is evidence that a teardown never kills the
// wrong process and never leaves one behind. Every test runs in two sizes:
// a bounded one in `make test` and the full one under the torture build
// tag (`make torture`), see torture_limits*_test.go. Each test logs its
// figures on one "TORTURE <name>:" line, which `make torture` collects.

// envInt reads a positive count from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// envDuration reads a positive duration from the environment, or def.
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, s)
	}
	return d
}

// tortureSeed returns TORTURE_SEED or a fresh seed, and logs it so that a
// failing run can be replayed exactly.
func tortureSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TORTURE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("TORTURE_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (replay with TORTURE_SEED=%d)", seed, seed)
	return seed
}

// figures logs one test's measured figures on a line `make torture` greps.
func figures(t *testing.T, name string, kv ...any) {
	t.Helper()
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	t.Logf("TORTURE %s:%s", name, b.String())
}

// percentile returns the p-th percentile (0..100) of ds by nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("count fds: %v", err)
	}
	// ReadDir's own descriptor on the directory is listed too.
	return len(ents) - 1
}

// rssBytes is this process's resident set size (statm field 2, in pages).
func rssBytes(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatalf("read statm: %v", err)
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		t.Fatalf("statm %q", b)
	}
	pages, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		t.Fatalf("statm %q: %v", b, err)
	}
	return pages * uint64(os.Getpagesize())
}

// envChild names the child role a re-executed test binary plays.
const envChild = "SANDTOP_TORTURE_CHILD"

// childRole reports whether this process was re-executed to play the test
// named name. A child test skips itself in a normal run.
func childRole(t *testing.T, name string) {
	t.Helper()
	if os.Getenv(envChild) != name {
		t.Skip("runs only as a re-executed child of a torture test")
	}
}

// childCmd re-executes the test binary to run the single test name with
// envChild set, so that test plays its role.
func childCmd(t *testing.T, exe, name string, env ...string) *exec.Cmd {
	t.Helper()
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(exe, "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), append([]string{envChild + "=" + name}, env...)...)
	return cmd
}

// planPID plans the teardown of pid's subtree in v, as the screen's
// subtree kill does, with an engine of default options guarding it.
func planPID(t *testing.T, v *model.View, pid int, opts PlanOptions) (*Engine, *Plan) {
	t.Helper()
	eng, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Protected = eng.Protected()
	plan, err := PlanSubtree(v, pid, opts)
	if err != nil {
		t.Fatal(err)
	}
	return eng, plan
}
