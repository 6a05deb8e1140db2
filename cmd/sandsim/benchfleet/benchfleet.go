// Package benchfleet gives benchmark binaries the sandsim fleet they
// measure: a bulk fleet (fleet.Bulk) of the size a benchmark asks for,
// started once per process and shared by every benchmark of that size, so
// a run pays for one fleet start per size, not one per benchmark.
//
// `make bench` runs each benchmark binary once per size in BENCH_PROCS
// (default "1000,10000"), so each process holds one fleet:
//
//	func BenchmarkX(b *testing.B) {
//		for _, n := range benchfleet.Procs() {
//			b.Run(benchfleet.Name(n), func(b *testing.B) {
//				benchfleet.Start(b, n)
//				...
//			})
//		}
//	}
//
// and TestMain closes it at the end:
//
//	func TestMain(m *testing.M) { os.Exit(benchfleet.Run(m)) }
//
// The fleet's processes are a sandsim binary (SANDSIM, or one built with
// `go build` on first use), not the test binary: a package whose tests the
// fleet package imports (proc) cannot make its test binary play the
// fleet's roles, and a separate binary keeps every benchmark binary alike.
// Only benchmarks use this package; nothing in sandtop imports it.
package benchfleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/proc/proctest"
)

// DefaultProcs are the fleet sizes when BENCH_PROCS is not set.
var DefaultProcs = []int{1000, 10000}

// startTimeout bounds a fleet start; 10,000 processes take about 15 s on
// a 2-core machine.
const startTimeout = 3 * time.Minute

var shared struct {
	mu  sync.Mutex
	n   int
	f   *fleet.Fleet
	exe string
	tmp string
}

// Procs returns the fleet sizes to benchmark, from BENCH_PROCS (a comma- or
// space-separated list of process counts), or DefaultProcs.
func Procs() []int {
	env := strings.TrimSpace(os.Getenv("BENCH_PROCS"))
	if env == "" {
		return DefaultProcs
	}
	var out []int
	for _, f := range strings.FieldsFunc(env, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			panic(fmt.Sprintf("BENCH_PROCS=%q: %q is not a process count", env, f))
		}
		out = append(out, n)
	}
	return out
}

// Name names a sub-benchmark by fleet size: "procs=10000".
func Name(n int) string { return "procs=" + strconv.Itoa(n) }

// Start returns a running bulk fleet of n processes, starting it on first
// use and replacing a fleet of another size. It skips the benchmark under
// -short and without root (the fleet's cgroups need it, and the numbers
// only mean something with them).
func Start(tb testing.TB, n int) *fleet.Fleet {
	tb.Helper()
	if testing.Short() {
		tb.Skip("-short: skipping a benchmark that starts a fleet of real processes")
	}
	if os.Geteuid() != 0 {
		proctest.SkipMissing(tb, "needs root: the benchmark fleet puts its sandboxes in cgroups")
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.f != nil && shared.n == n {
		return shared.f
	}
	if err := closeLocked(); err != nil {
		tb.Fatalf("close the fleet of %d processes: %v", shared.n, err)
	}
	exe, err := sandsim()
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	f, err := fleet.Start(ctx, fleet.Bulk(n), fleet.Options{Exe: exe})
	if err != nil {
		tb.Fatalf("start a fleet of %d processes: %v", n, err)
	}
	shared.f, shared.n = f, n
	return f
}

// Close closes the shared fleet, if any, reaps what it left to this
// process (fleet.Start made it a child subreaper), and removes the sandsim
// binary it built.
func Close() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	err := closeLocked()
	if shared.tmp != "" {
		err = errors.Join(err, os.RemoveAll(shared.tmp))
		shared.tmp, shared.exe = "", ""
	}
	return err
}

func closeLocked() error {
	if shared.f == nil {
		return nil
	}
	err := shared.f.Close()
	fleet.ReapZombies()
	shared.f, shared.n = nil, 0
	return err
}

// Run runs the tests and benchmarks, then closes the shared fleet; it
// returns the exit code for os.Exit. A TestMain that must do more calls
// m.Run and Close itself.
func Run(m *testing.M) int {
	code := m.Run()
	if err := Close(); err != nil {
		fmt.Fprintln(os.Stderr, "benchfleet:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// sandsim returns the sandsim binary: $SANDSIM, or one built from this
// module with `go build` into a temporary directory.
func sandsim() (string, error) {
	if shared.exe != "" {
		return shared.exe, nil
	}
	if exe := os.Getenv("SANDSIM"); exe != "" {
		shared.exe = exe
		return exe, nil
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no go command to build sandsim with; set SANDSIM to a built one: %w", err)
	}
	tmp, err := os.MkdirTemp("", "benchfleet-")
	if err != nil {
		return "", err
	}
	exe := filepath.Join(tmp, "sandsim")
	cmd := exec.Command(gobin, "build", "-o", exe, "github.com/sandtop/sandtop/cmd/sandsim")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("build sandsim (or set SANDSIM to a built one): %v\n%s", err, out)
	}
	shared.exe, shared.tmp = exe, tmp
	return exe, nil
}

// CPUTimer starts counting this process's CPU time (user and system, every
// thread, the garbage collector's included); the returned func reports it
// as cpu-ns/op. Wall time (ns/op) suffers when other work shares the
// machine, and a cold scan's two workers can use more CPU than wall time;
// cpu-ns/op shows both effects.
func CPUTimer(b *testing.B) (stop func()) {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
