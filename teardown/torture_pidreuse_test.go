package teardown

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// TestTorturePIDReuse recycles the pids of a planned teardown before the
// engine runs it, TORTURE_REUSE rounds, and proves that the new owners of
// those pids never receive a signal. It runs in a private pid namespace
// (clone(2) CLONE_NEWPID), where the test binary is the only process that
// forks and ns_last_pid is its own (pid_namespaces(7)): pids can be steered
// without racing the rest of the host. A private mount namespace carries a
// procfs of that pid namespace, which is what the engine reads.
func TestTorturePIDReuse(t *testing.T) {
	proctest.RequireRoot(t)
	rounds := envInt(t, "TORTURE_REUSE", defaultReuseRounds)
	cmd := childCmd(t, "", "TestTorturePIDReuseChild",
		"TORTURE_REUSE="+strconv.Itoa(rounds), "TORTURE_SEED="+strconv.FormatUint(tortureSeed(t), 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS,
		// Pid 1 of the namespace dying takes every process of the
		// namespace with it (pid_namespaces(7)), so this alone cleans up.
		Pdeathsig: syscall.SIGKILL,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := runChild(ctx, cmd)
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
		proctest.SkipMissing(t, "cannot make a pid namespace here: %v", err)
	}
	fig := ""
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "TORTURE pidreuse:"); i >= 0 {
			fig = l[i+len("TORTURE pidreuse:"):]
		}
	}
	if err != nil || fig == "" {
		t.Fatalf("pid-namespace child failed: %v\n%s", err, out)
	}
	t.Logf("TORTURE pidreuse:%s", fig)
	if strings.Contains(fig, "wrong_signals=") && !strings.Contains(fig, "wrong_signals=0 ") {
		t.Errorf("signals reached the new owner of a recycled pid:\n%s", out)
	}
}

// runChild runs cmd, returning its combined output.
func runChild(ctx context.Context, cmd *exec.Cmd) (string, error) {
	var b strings.Builder
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := cmd.Start(); err != nil {
		return "", err
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		return b.String(), err
	case <-ctx.Done():
		_ = cmd.Process.Kill() // Go's pidfd: never a recycled pid
		<-waited
		return b.String(), fmt.Errorf("child timed out: %w", ctx.Err())
	}
}

// TestTorturePIDReuseChild is pid 1 of a private pid namespace.
func TestTorturePIDReuseChild(t *testing.T) {
	childRole(t, "TestTorturePIDReuseChild")
	if os.Getpid() != 1 {
		t.Fatalf("pid %d: want to be pid 1 of a fresh pid namespace", os.Getpid())
	}
	// Keep the procfs mount out of the host's mount namespace, then show
	// this pid namespace at /proc (mount_namespaces(7), proc(5)).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make mounts private: %v", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		t.Fatalf("mount procfs: %v", err)
	}
	rounds := envInt(t, "TORTURE_REUSE", 1)
	seed, _ := strconv.ParseUint(os.Getenv("TORTURE_SEED"), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 11))
	var planned, reused, reportedReused, wrong int
	for round := range rounds {
		fallback := round%2 == 1
		if fallback {
			// Also a kernel without pidfd_open: kill(2) after a start-time
			// re-check, the path where a race could hurt.
			saved := pidfdOpen
			pidfdOpen = func(int, int) (int, error) { return -1, unix.ENOSYS }
			r := reuseRound(t, rng)
			pidfdOpen = saved
			planned, reused, reportedReused, wrong = planned+r.planned, reused+r.reused, reportedReused+r.reportedReused, wrong+r.wrong
		} else {
			r := reuseRound(t, rng)
			planned, reused, reportedReused, wrong = planned+r.planned, reused+r.reused, reportedReused+r.reportedReused, wrong+r.wrong
		}
		if t.Failed() {
			break
		}
	}
	// The trailing space lets the parent match "wrong_signals=0 " exactly.
	t.Logf("TORTURE pidreuse: rounds=%d planned_pids=%d reuse_events=%d engine_reported_reused=%d wrong_signals=%d ",
		rounds, planned, reused, reportedReused, wrong)
	if reused < rounds {
		t.Errorf("only %d reuse events in %d rounds: the test did not exercise reuse", reused, rounds)
	}
}

type reuseResult struct{ planned, reused, reportedReused, wrong int }

// canary is a process that took (or tried to take) a victim's pid. It
// reports every catchable signal on stdout and exits 7 when its stdin
// closes; an uncatchable one shows in its state (T) or exit status.
type canary struct {
	cmd   *exec.Cmd
	id    proc.Identity
	stdin io.WriteCloser
	out   *bufio.Reader
}

const canaryScript = `for s in TERM CONT HUP INT QUIT USR1 USR2; do trap "echo $s" $s; done; echo ready; read _; exit 7`

// reuseRound plans the teardown of a 3-process tree, makes the tree go
// (killed, or exiting on its own), puts canaries on its pids, runs the plan
// and checks the canaries.
func reuseRound(t *testing.T, rng *rand.Rand) reuseResult {
	t.Helper()
	var res reuseResult
	exitsAlone := rng.IntN(2) == 0
	script := "sleep 600 & sleep 600 & wait"
	if exitsAlone {
		script = "sleep 0.2 & sleep 0.2 & wait"
	}
	victim := exec.Command("/bin/sh", "-c", script)
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reap(victim) })
	kids := waitChildren(t, victim.Process.Pid, 2)

	v := fleettest.View(t, nil)
	eng, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	grace := []time.Duration{0, 50 * time.Millisecond}[rng.IntN(2)]
	plan, err := PlanSubtree(v, victim.Process.Pid, PlanOptions{Grace: grace, Protected: eng.Protected()})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if len(plan.Members) != 3 {
		t.Fatalf("plan has %d members, want sh and its 2 sleeps", len(plan.Members))
	}
	res.planned = len(plan.Members)

	if !exitsAlone {
		for _, pid := range kids {
			killChild(t, pid, plan)
		}
	}
	if err := victim.Wait(); err != nil && !exitsAlone {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
	}
	// Identity is (pid, start tick): a new owner born in the victim's own
	// clock tick would be indistinguishable. A real reuse needs the pid
	// space to wrap first, which takes far longer than a tick.
	time.Sleep(20 * time.Millisecond)

	var canaries []*canary
	t.Cleanup(func() {
		for _, c := range canaries {
			c.stdin.Close()
			reap(c.cmd)
		}
	})
	pids := make([]int, 0, len(plan.Members))
	for _, m := range plan.Members {
		pids = append(pids, m.PID)
	}
	slices.Sort(pids)
	for _, pid := range pids {
		c := startCanary(t, pid)
		canaries = append(canaries, c)
		if c.id.PID == pid {
			res.reused++
		}
	}

	var events []Event
	tot := eng.Run(context.Background(), plan, func(ev Event) { events = append(events, ev) })
	for _, ev := range events {
		if ev.Step == StepPin && strings.Contains(ev.Detail, "pid reused") {
			res.reportedReused++
		}
	}
	canaryPIDs := map[int]bool{}
	for _, c := range canaries {
		canaryPIDs[c.id.PID] = true
	}
	for _, ev := range events {
		if ev.Signal != "" && ev.Status == OK && canaryPIDs[ev.PID] {
			res.wrong++
			t.Errorf("engine reports %s sent to pid %d, now a canary: %s", ev.Signal, ev.PID, ev.Text())
		}
	}
	for _, c := range canaries {
		if w := c.check(t); w != "" {
			res.wrong++
			t.Errorf("canary %v (new owner of a planned pid) got %s", c.id, w)
		}
	}
	if t.Failed() {
		t.Logf("totals %+v", tot)
		for _, ev := range events {
			t.Logf("[%s] %s", ev.Status, ev.Text())
		}
	}
	return res
}

// waitChildren waits until pid has n children and returns them.
func waitChildren(t *testing.T, pid, n int) []int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		kids, err := proc.Children("/proc", pid)
		if err != nil {
			t.Fatalf("children of %d: %v", pid, err)
		}
		if len(kids) >= n {
			return kids
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d has children %v, want %d", pid, kids, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// killChild SIGKILLs a planned grandchild through a pidfd checked against
// the planned start time.
func killChild(t *testing.T, pid int, plan *Plan) {
	t.Helper()
	for _, m := range plan.Members {
		if m.PID != pid {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatalf("pidfd_open %d: %v", pid, err)
		}
		defer unix.Close(fd)
		if id, _, err := proc.ReadIdentity("/proc", pid); err != nil || id != m.Identity {
			t.Fatalf("pid %d is not the planned %v: %v %v", pid, m.Identity, id, err)
		}
		if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
			t.Fatalf("kill %d: %v", pid, err)
		}
		return
	}
	t.Fatalf("pid %d is not in the plan", pid)
}

// startCanary starts a canary, steering it onto pid through ns_last_pid
// (the last pid handed out in this namespace; the next fork gets the next
// free one); pid 0 takes whatever pid comes. The thread is locked so that
// no other thread of this process is created between the write and the
// fork.
func startCanary(t *testing.T, pid int) *canary {
	t.Helper()
	c := &canary{cmd: exec.Command("/bin/sh", "-c", canaryScript)}
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewReader(stdout)
	runtime.LockOSThread()
	if pid > 0 {
		err = os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0)
	}
	if err == nil {
		err = c.cmd.Start()
	}
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatalf("start canary at %d: %v", pid, err)
	}
	if line, err := c.out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("canary %d: %q, %v", c.cmd.Process.Pid, line, err)
	}
	id, _, err := proc.ReadIdentity("/proc", c.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	c.id = id
	return c
}

// check ends the canary and says what reached it: "" for nothing.
func (c *canary) check(t *testing.T) string {
	t.Helper()
	var got []string
	if id, st, err := proc.ReadIdentity("/proc", c.id.PID); err != nil || id != c.id {
		got = append(got, fmt.Sprintf("death before its time (%v, %v)", id, err))
	} else if st == 'T' || st == 't' {
		got = append(got, "SIGSTOP")
		_ = c.cmd.Process.Signal(syscall.SIGCONT)
	}
	c.stdin.Close()
	rest, _ := io.ReadAll(c.out)
	if s := strings.TrimSpace(string(rest)); s != "" {
		got = append(got, "SIG"+strings.ReplaceAll(s, "\n", ",SIG"))
	}
	err := c.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 7:
	case err == nil:
		got = append(got, "exit 0 instead of 7")
	default:
		got = append(got, fmt.Sprintf("exit: %v", err))
	}
	return strings.Join(got, "; ")
}
