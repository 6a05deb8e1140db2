package teardown

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/words"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// Floods during a kill: a sandbox that forks as fast as it can inside a
// pids-limited cgroup, and one whose processes exec in a loop, torn down
// both as a sandbox with a dedicated cgroup (cgroup.kill after
// pids.max=0) and as a bare process subtree (the SIGSTOP walk, no cgroup
// to lean on). Each trial must end with nothing of the sandbox alive, no
// bystander signalled, within floodBound, and the totals must say how many
// passes it took.

// floodBound is the longest a flood's teardown may take (the grace
// included) before the trial fails. On an idle host a trial takes a
// second or two; on this shared two-core host, at load averages of
// several hundred, the scan that re-judges a dedicated cgroup before
// cgroup.kill alone took a minute.
const floodBound = 2 * time.Minute

// floodPidsMax bounds each flood: enough processes to keep the SIGSTOP walk
// busy, few enough not to starve a shared host.
const floodPidsMax = 64

// floodRule recognises a flood sandbox by its cgroup, as a rules file
// would: the dedicated case.
var floodRule = &model.Rule{Name: "flood", Cgroup: regexp.MustCompile(`(?:^|/)sandtop-flood-(?P<id>[0-9a-f]+)$`), Source: "test"}

// forkBomb forks as fast as it can: every process loops on fork, half the
// children exit at once (their pids are freed and taken again) and the
// rest fork in turn; a failed fork (pids.max reached) is simply retried.
// SIGTERM is ignored, so the flood runs through the grace.
const forkBomb = `$SIG{TERM} = "IGNORE"; $SIG{CHLD} = "IGNORE"; while (1) { my $p = fork(); if (defined $p && $p == 0) { exit 0 if rand() < 0.5 } }`

// floodBox is one flooding sandbox under test.
type floodBox struct {
	id   string
	v2   string // its v2 cgroup (dedicated or not)
	pids string // the directory whose pids.max bounds it (v2, or the v1 pids hierarchy)
	root *exec.Cmd
}

// startFlood starts argv in a fresh v2 cgroup (named for the flood rule
// when dedicated) with pids.max set, v2 or v1 whichever carries the pids
// controller here (found from /proc/self/mountinfo). The root waits for a
// line on stdin, so it is in its cgroups before anything forks.
func startFlood(t *testing.T, dedicated bool, argv ...string) *floodBox {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	fb := &floodBox{id: hex.EncodeToString(b)}
	name := "sandtop-test-flood" + fb.id
	if dedicated {
		name = "sandtop-flood-" + fb.id
	}
	fb.v2 = filepath.Join(cgroupMount(t, ""), name)
	mkdirs(t, fb.v2)
	fb.pids = fb.v2
	if _, err := os.Stat(filepath.Join(fb.v2, "pids.max")); err != nil {
		fb.pids = filepath.Join(cgroupMount(t, "pids"), name)
		mkdirs(t, fb.pids)
	}
	// Cleanup runs even when the test failed halfway: whatever of the
	// flood is left is killed through the v2 cgroup, which holds all of
	// it, and both directories are removed.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = SetPidsMax0(fb.pids)
		_ = Kill(fb.v2)
		if err := WaitCgroupEmpty(ctx, fb.v2); err != nil {
			t.Errorf("flood cleanup: %v", err)
		}
		for _, d := range []string{fb.pids, fb.v2} {
			if err := RemoveTree(ctx, d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("flood cleanup: %v", err)
			}
		}
	})
	if err := os.WriteFile(filepath.Join(fb.pids, "pids.max"), []byte(strconv.Itoa(floodPidsMax)), 0o644); err != nil {
		t.Fatalf("pids.max: %v", err)
	}
	fb.root = exec.Command("/bin/sh", append([]string{"-c", `read _; exec "$@"`, "flood"}, argv...)...)
	stdin, err := fb.root.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := fb.root.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fb.root.Wait() })
	moveInto(t, fb.v2, fb.root.Process.Pid)
	if fb.pids != fb.v2 {
		moveInto(t, fb.pids, fb.root.Process.Pid)
	}
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	return fb
}

// waitFlooding waits until the flood holds at least n processes.
func (fb *floodBox) waitFlooding(t *testing.T, n int) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids, err := ReadProcs(fb.v2)
		if err != nil {
			t.Fatal(err)
		}
		if len(pids) >= n {
			return len(pids)
		}
		if time.Now().After(deadline) {
			t.Fatalf("flood %s has %d processes after 20s, want %d", fb.id, len(pids), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// floodResult is one flood trial.
type floodResult struct {
	elapsed            time.Duration
	passes, stopPasses int
	survivors          int // alive in the sandbox's cgroup after the teardown
	named              int // survivors the totals name
	harmed             int // bystanders signalled or dead
	ok                 bool
}

// floodTrial tears fb down while it floods, with bystanders around it,
// and checks the outcome.
func floodTrial(t *testing.T, fb *floodBox, dedicated bool, grace time.Duration) floodResult {
	t.Helper()
	// Bystanders: one in the test's own cgroup, one in a sibling v2
	// cgroup of the flood's (its parent is the same).
	var bystanders []*canary
	t.Cleanup(func() {
		for _, c := range bystanders {
			c.stdin.Close()
			reap(c.cmd)
		}
	})
	sibling := newCgroup(t, filepath.Dir(fb.v2))
	for i := range 2 {
		c := startCanary(t, 0) // any pid
		if i == 1 {
			moveInto(t, sibling, c.id.PID)
		}
		bystanders = append(bystanders, c)
	}
	fb.waitFlooding(t, floodPidsMax/2)

	rules := model.Rules{floodRule}
	eng, err := New(Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	v := fleettest.View(t, rules)
	// A flood's process that is exiting may sit in D for seconds on a
	// loaded host while the kernel frees its memory (unlink_file_vma):
	// verify's deadline leaves it the time.
	po := PlanOptions{Grace: grace, Deadline: 30 * time.Second, Protected: eng.Protected(), ProcRoot: "/proc"}
	var plan *Plan
	if dedicated {
		sb := v.Sandbox("flood:" + fb.id)
		if sb == nil {
			t.Fatalf("no sandbox flood:%s in the view", fb.id)
		}
		plan, err = PlanSandbox(v, sb, po)
	} else {
		plan, err = PlanSubtree(v, fb.root.Process.Pid, po)
	}
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if dedicated != (plan.CgroupDir != "") {
		t.Fatalf("dedicated %v but the plan's cgroup dir is %q", dedicated, plan.CgroupDir)
	}
	var events []Event
	start := time.Now()
	tot := eng.Run(context.Background(), plan, func(ev Event) { events = append(events, ev) })
	res := floodResult{elapsed: time.Since(start), passes: tot.Passes, stopPasses: tot.StopPasses, named: len(tot.Survivors), ok: tot.OK()}
	if left, err := ReadProcs(fb.v2); err == nil {
		for _, pid := range left {
			if id, st, err := proc.ReadIdentity("/proc", pid); err == nil && st != 'Z' {
				res.survivors++
				stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				t.Logf("alive after the teardown: %v %s", id, stat)
			}
		}
	}
	for _, c := range bystanders {
		if w := c.check(t); w != "" {
			res.harmed++
			t.Errorf("bystander %v got %s", c.id, w)
		}
	}
	bystanders = nil
	var done *Event
	for i := range events {
		if events[i].Step == StepDone {
			done = &events[i]
		}
	}
	switch {
	case res.survivors > 0 || !res.ok:
		t.Errorf("flood %s: %d alive in its cgroup after the teardown, totals %+v", fb.id, res.survivors, tot)
	case res.elapsed > floodBound:
		t.Errorf("flood %s: the teardown took %s, more than %s", fb.id, res.elapsed, floodBound)
	case tot.Passes < 1 || done == nil || !strings.Contains(done.Detail, words.Count(tot.Passes, "kill pass", "kill passes")):
		t.Errorf("flood %s: the totals do not say how many passes it took: %+v, done %v", fb.id, tot, done)
	case !dedicated && tot.StopPasses < 1:
		t.Errorf("flood %s: a subtree teardown without a SIGSTOP pass: %+v", fb.id, tot)
	}
	if t.Failed() || os.Getenv("FLOOD_LOG") != "" {
		for _, ev := range events {
			t.Logf("%s [%s] %s", ev.Time.Sub(start).Round(time.Millisecond), ev.Status, ev.Text())
		}
	}
	return res
}

// floodFigures logs a flood test's figures.
func floodFigures(t *testing.T, name string, rs []floodResult) {
	t.Helper()
	var el []time.Duration
	var passes, stops []int
	surv, named, harmed := 0, 0, 0
	for _, r := range rs {
		el = append(el, r.elapsed.Round(time.Millisecond))
		passes, stops = append(passes, r.passes), append(stops, r.stopPasses)
		surv, named, harmed = surv+r.survivors, named+r.named, harmed+r.harmed
	}
	figures(t, name, "trials", len(rs), "survivors", surv, "named_survivors", named, "bystanders_harmed", harmed,
		"elapsed", fmt.Sprint(el), "passes", fmt.Sprint(passes), "stop_passes", fmt.Sprint(stops))
}

// TestFloodForkBomb tears down a fork bomb in a pids-limited cgroup,
// FLOOD_TRIALS times each as a dedicated-cgroup sandbox and as a process
// subtree.
func TestFloodForkBomb(t *testing.T) {
	proctest.RequireRoot(t)
	perl, err := exec.LookPath("perl")
	if err != nil {
		proctest.SkipMissing(t, "needs perl for the fork bomb")
	}
	floodBoth(t, "forkbomb", perl, "-e", forkBomb)
}

// TestFloodExecLoop tears down a sandbox whose processes exec in a loop
// (each one's comm and argv change all the time, its pid and start time
// stay) while its root keeps starting more, up to pids.max.
func TestFloodExecLoop(t *testing.T) {
	proctest.RequireRoot(t)
	dir := t.TempDir()
	// Two scripts that exec each other for ever: the process's image
	// changes, its identity does not.
	a, b := filepath.Join(dir, "loop-a"), filepath.Join(dir, "loop-b")
	for _, s := range [][2]string{{a, b}, {b, a}} {
		if err := os.WriteFile(s[0], []byte("#!/bin/sh\nexec \""+s[1]+"\" \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The root starts a looper every few milliseconds; a fork that fails
	// at pids.max is retried (a shell would die of it, and its children
	// escape the tree: see TestChurnParentExitsMidTeardown).
	perl, err := exec.LookPath("perl")
	if err != nil {
		proctest.SkipMissing(t, "needs perl for the exec flood's root")
	}
	root := `$SIG{TERM} = "IGNORE"; $SIG{CHLD} = "IGNORE"; while (1) { my $p = fork(); exec($ARGV[0]) if defined $p && $p == 0; select(undef, undef, undef, 0.005) }`
	floodBoth(t, "execloop", perl, "-e", root, a)
}

// floodBoth starts the flood (argv) FLOOD_TRIALS times as a
// sandbox with a dedicated cgroup and as many times as a bare subtree,
// tears each down, grace 0 and 300 ms in turn, and logs the figures under
// name.
func floodBoth(t *testing.T, name string, argv ...string) {
	trials := envInt(t, "FLOOD_TRIALS", defaultFloodTrials)
	for _, dedicated := range []bool{true, false} {
		kind := map[bool]string{true: "dedicated", false: "subtree"}[dedicated]
		t.Run(kind, func(t *testing.T) {
			var rs []floodResult
			for i := range trials {
				fb := startFlood(t, dedicated, argv...)
				rs = append(rs, floodTrial(t, fb, dedicated, []time.Duration{0, 300 * time.Millisecond}[i%2]))
				if t.Failed() {
					break
				}
			}
			floodFigures(t, name+"_"+kind, rs)
		})
	}
}

// TestChurnParentExitsMidTeardown: a member forks a child after the plan
// and exits, in the middle of the teardown; the child, re-parented above
// the root (to this test, a subreaper, or to PID 1), has left the tree.
// Nothing proves it the tree's, so it is not signalled, but the teardown
// must not say "done" while it lives: it fails naming it. (A shell flooding
// a pids limit does this when a failed fork kills it.)
func TestChurnParentExitsMidTeardown(t *testing.T) {
	proctest.RequireRoot(t)
	cg := newCgroup(t, cgroupMount(t, ""))
	t.Cleanup(func() { _ = Kill(cg); _ = WaitCgroupEmpty(timeout(t, 5*time.Second), cg) })
	root := exec.Command("/bin/sh", "-c", `sleep 1000 & read _; sleep 1001 & exit 0`)
	stdin, err := root.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := root.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reap(root) })
	moveInto(t, cg, root.Process.Pid)
	waitChildren(t, root.Process.Pid, 1)
	eng, plan := planPID(t, fleettest.View(t, nil), root.Process.Pid, PlanOptions{})
	var events []Event
	tot := eng.Run(context.Background(), plan, func(ev Event) {
		events = append(events, ev)
		if ev.Step != StepPlan {
			return
		}
		// Mid-teardown: the root forks its late child and exits.
		_, _ = stdin.Write([]byte("go\n"))
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if _, st, err := proc.ReadIdentity("/proc", root.Process.Pid); err == nil && st == 'Z' {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	var late []int
	pids, _ := ReadProcs(cg)
	for _, pid := range pids {
		if id, st, err := proc.ReadIdentity("/proc", pid); err == nil && st != 'Z' {
			late = append(late, id.PID)
		}
	}
	if len(late) != 1 || slices.ContainsFunc(plan.Members, func(m Member) bool { return m.PID == late[0] }) {
		t.Fatalf("the escape did not happen as planned: alive after the teardown %v", late)
	}
	named := len(tot.Survivors) == 1 && tot.Survivors[0].PID == late[0] && tot.Survivors[0].Cause == "suspect"
	if tot.OK() || !named {
		for _, ev := range events {
			t.Logf("[%s] %s", ev.Status, ev.Text())
		}
		t.Errorf("the escaped child %d lives: want a failed teardown naming it, got ok=%v survivors %+v", late[0], tot.OK(), tot.Survivors)
	}
}

// TestChurnPIDReuseMidTeardown: a sandbox's processes exit in the middle of
// its teardown (SIGTERM during the grace) and bystanders take their pids
// at once (steered through ns_last_pid), while the engine still has the
// SIGKILL phase and verify to run: no bystander may receive anything, and
// the teardown must end clean with its passes counted. It runs in a
// private pid namespace, like TestTorturePIDReuse, where only this test
// forks.
func TestChurnPIDReuseMidTeardown(t *testing.T) {
	proctest.RequireRoot(t)
	rounds := envInt(t, "FLOOD_TRIALS", defaultFloodTrials)
	cmd := childCmd(t, "", "TestChurnPIDReuseMidTeardownChild", "FLOOD_TRIALS="+strconv.Itoa(rounds))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := runChild(ctx, cmd)
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
		proctest.SkipMissing(t, "cannot make a pid namespace here: %v", err)
	}
	fig := ""
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "TORTURE reuse_midteardown:"); i >= 0 {
			fig = l[i:]
		}
	}
	if err != nil || fig == "" {
		t.Fatalf("pid-namespace child failed: %v\n%s", err, out)
	}
	t.Log(fig)
}

func TestChurnPIDReuseMidTeardownChild(t *testing.T) {
	childRole(t, "TestChurnPIDReuseMidTeardownChild")
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make mounts private: %v", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		t.Fatalf("mount procfs: %v", err)
	}
	// Bystanders live in a cgroup of their own, so that nothing but the
	// pid ties them to the sandbox.
	bycg := newCgroup(t, cgroupMount(t, ""))
	rounds := envInt(t, "FLOOD_TRIALS", 1)
	var reused, wrong, survivors int
	var passes []int
	var el []time.Duration
	for round := range rounds {
		saved := pidfdOpen
		if round%2 == 1 {
			// Also a kernel without pidfd_open: kill(2) after a
			// start-time re-check, where a reused pid could be hit.
			pidfdOpen = func(int, int) (int, error) { return -1, unix.ENOSYS }
		}
		r := reuseMidTeardown(t, bycg)
		pidfdOpen = saved
		reused, wrong, survivors = reused+r.reused, wrong+r.wrong, survivors+r.survivors
		passes, el = append(passes, r.passes), append(el, r.elapsed.Round(time.Millisecond))
		if t.Failed() {
			break
		}
	}
	t.Logf("TORTURE reuse_midteardown: rounds=%d pids_reused_mid_teardown=%d bystanders_harmed=%d survivors=%d passes=%v elapsed=%v ",
		rounds, reused, wrong, survivors, passes, el)
	if reused < rounds {
		t.Errorf("only %d pids reused in %d rounds: the test did not exercise reuse", reused, rounds)
	}
}

type midResult struct {
	reused, wrong, survivors, passes int
	elapsed                          time.Duration
}

// reuseMidTeardown runs one round: a shell that ignores SIGTERM with three
// children that die of it; during the grace, once they are dead and
// reaped, a bystander is started on each of their pids.
func reuseMidTeardown(t *testing.T, bycg string) midResult {
	var res midResult
	victim := exec.Command("/bin/sh", "-c", `trap '' TERM; for i in 1 2 3; do (trap - TERM; exec sleep 600) & done; while :; do wait; sleep 1; done`)
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reap(victim) })
	waitChildren(t, victim.Process.Pid, 3)
	eng, plan := planPID(t, fleettest.View(t, nil), victim.Process.Pid, PlanOptions{Grace: 2 * time.Second, Deadline: 5 * time.Second})
	var bystanders []*canary
	t.Cleanup(func() {
		for _, c := range bystanders {
			c.stdin.Close()
			reap(c.cmd)
		}
	})
	taken := map[int]bool{}
	// since is, per bystander pid, the first event emitted after it took
	// the pid: anything before went to the sandbox's process.
	since := map[int]int{}
	var events []Event
	start := time.Now()
	tot := eng.Run(context.Background(), plan, func(ev Event) {
		events = append(events, ev)
		if ev.Step != StepWait && ev.Step != StepStop {
			return
		}
		// Mid-teardown: every planned pid that is free now goes to a
		// bystander.
		for _, m := range plan.Members {
			if taken[m.PID] {
				continue
			}
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", m.PID)); err == nil {
				continue
			}
			c := startCanary(t, m.PID)
			moveInto(t, bycg, c.id.PID)
			since[c.id.PID] = len(events)
			bystanders = append(bystanders, c)
			if c.id.PID == m.PID {
				taken[m.PID] = true
				res.reused++
			}
		}
	})
	res.elapsed, res.passes = time.Since(start), tot.Passes
	for i, ev := range events {
		if from, ok := since[ev.PID]; ok && i >= from && ev.Signal != "" && ev.Status == OK {
			res.wrong++
			t.Errorf("the engine reports %s sent to pid %d, now a bystander's: %s", ev.Signal, ev.PID, ev.Text())
		}
	}
	for _, c := range bystanders {
		if w := c.check(t); w != "" {
			res.wrong++
			t.Errorf("bystander %v (new owner of a planned pid) got %s", c.id, w)
		}
	}
	bystanders = nil
	for _, m := range plan.Members {
		if id, st, err := proc.ReadIdentity("/proc", m.PID); err == nil && id == m.Identity && st != 'Z' {
			res.survivors++
		}
	}
	if !tot.OK() || res.survivors > 0 || tot.Passes < 1 {
		t.Errorf("teardown: ok %v, %d planned processes alive, totals %+v", tot.OK(), res.survivors, tot)
	}
	if t.Failed() {
		for _, ev := range events {
			t.Logf("[%s] %s", ev.Status, ev.Text())
		}
	}
	return res
}
