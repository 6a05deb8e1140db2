package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc"
)

// envThreads makes the test binary a process of that many threads, each
// asleep, until it is killed.
const envThreads = "SANDTOP_TEST_THREADS"

// envReportHWM makes the test binary, run as sandtop, write its peak
// resident memory (VmHWM) on stderr last. The peak the kernel gives a
// parent (ru_maxrss) will not do: a child that os/exec starts shares its
// parent's memory until it execs, and exec keeps the larger peak.
const envReportHWM = "SANDTOP_TEST_REPORT_HWM"

func reportHWM() {
	status, _ := os.ReadFile("/proc/self/status")
	for line := range strings.Lines(string(status)) {
		if strings.HasPrefix(line, "VmHWM:") {
			fmt.Fprint(os.Stderr, line)
		}
	}
}

func holdThreads(n int) {
	for range n - 1 {
		go func() {
			runtime.LockOSThread()
			select {}
		}()
	}
	runtime.LockOSThread()
	select {}
}

// TestMemoryBoundHostile: a process with a 4 MB command line and a sandbox
// of 2,000 threads cost sandtop's list --json no more than half again its
// peak memory on the same host without them, whole process against whole
// process (VmHWM, its resident high-water mark, as it ends). The
// host's own processes come and go (other tests, other users), so runs
// with and without the hostile sandboxes alternate, and each side keeps
// its lowest.
func TestMemoryBoundHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 2,000-thread process")
	}
	tag := fmt.Sprintf("%08x", rand.Uint32())
	rules := filepath.Join(t.TempDir(), "rules.toml")
	if err := os.WriteFile(rules, []byte("[[rule]]\nname = \"membox\"\nexe = '^membox"+tag+"$'\nflag = \"--box\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	peak := func() int64 {
		argv, _ := json.Marshal([]string{"list", "--json", "--rules", rules})
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envRunArgs+"="+string(argv), envReportHWM+"=")
		var errOut strings.Builder
		cmd.Stderr = &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("list --json: %v: %s", err, errOut.String())
		}
		var kB int64
		if _, err := fmt.Sscanf(errOut.String()[strings.LastIndex(errOut.String(), "VmHWM:"):], "VmHWM: %d kB", &kB); err != nil {
			t.Fatalf("no VmHWM from list --json: %v: %q", err, errOut.String())
		}
		return kB << 10
	}
	var before, after int64 = 1 << 62, 1 << 62
	for round := range 3 {
		before = min(before, peak())
		stop := startHostileSandboxes(t, tag)
		if round == 0 {
			doc := listJSON(t, "--rules", rules)
			long, threads := find(doc, "long"), find(doc, "threads")
			if long == nil || threads == nil || len(long.Processes) == 0 || !long.Processes[0].ArgsTruncated || threads.Processes[0].Threads < 2000 {
				t.Fatalf("the hostile sandboxes are not listed as they are: %+v %+v", long, threads)
			}
			if n := len(strings.Join(long.Processes[0].Argv, " ")); n > proc.MaxArgvBytes {
				t.Errorf("list --json keeps %d bytes of the 4 MB argv", n)
			}
		}
		a := peak()
		t.Logf("round %d: before %d after %d", round, before, a)
		after = min(after, a)
		stop()
	}
	t.Logf("list --json peak RSS: %.1f MB without, %.1f MB with a 4 MB argv and 2,000 threads: %.2f×",
		float64(before)/1e6, float64(after)/1e6, float64(after)/float64(before))
	if after > before*3/2 {
		t.Errorf("peak RSS %d with the hostile sandboxes, %d without: more than 1.5×", after, before)
	}
}

// startHostileSandboxes starts the sandbox "long", one process with a
// 4 MB command line, and "threads", one process of 2,000 threads, and
// returns what stops them.
func startHostileSandboxes(t *testing.T, tag string) (stop func()) {
	t.Helper()
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		cmds = nil
	}
	t.Cleanup(stop)
	start := func(args []string, threads string) *exec.Cmd {
		c := &exec.Cmd{Path: os.Args[0], Args: args, Env: append(os.Environ(), envThreads+"="+threads)}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		return c
	}
	threads := start([]string{"membox" + tag, "--box", "threads"}, "2000")
	// The kernel lays out argv within a quarter of the stack limit.
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &old); err != nil {
		t.Fatal(err)
	}
	raised := old
	if raised.Cur = max(old.Cur, 64<<20); raised.Max != unix.RLIM_INFINITY && raised.Cur > raised.Max {
		t.Skip("the stack limit is too low for a 4 MB argv")
	}
	if err := unix.Setrlimit(unix.RLIMIT_STACK, &raised); err != nil {
		t.Fatal(err)
	}
	long := []string{"membox" + tag, "--box", "long"}
	for i := range 40 {
		long = append(long, strings.Repeat(string(rune('a'+i%26)), 100<<10))
	}
	start(long, "1")
	if err := unix.Setrlimit(unix.RLIMIT_STACK, &old); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, err := proc.ReadStat("/proc", threads.Process.Pid)
		if err == nil && st.Threads >= 2000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread sandbox did not reach 2,000 threads: %+v %v", st, err)
		}
	}
	return stop
}
