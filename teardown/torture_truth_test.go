package teardown

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// The truth trials judge a teardown's last word, not only its kills: every
// process that started inside the sandbox is dead, or named among the
// survivors of a teardown that does not report success; no process
// outside it is signalled (a bystander that starts in the sandbox's cgroup
// after the plan least of all); and nothing is left stopped.

// truthSum adds up the truth trials.
type truthSum struct {
	trials, named, silent, harmed, stopped, suspects, late, relays int
}

// truthCase is how one sandbox of a truth fleet is torn down.
type truthCase struct {
	grace time.Duration
	// shared moves the sandbox's escaping member and the helper it
	// escaped to into a cgroup that does not name the sandbox.
	shared bool
	// late starts a bystander in that cgroup after the plan.
	late bool
	// withCgroup includes the plan's suspects.
	withCgroup bool
}

func truthSpec(rng *rand.Rand, n, fleetNo int) fleet.Spec {
	var spec fleet.Spec
	for i := range n {
		spec.Sandboxes = append(spec.Sandboxes, fleet.SandboxSpec{
			Name:       fmt.Sprintf("truth%d-%d", fleetNo, i),
			Runtime:    fleet.Runtimes[rng.IntN(len(fleet.Runtimes))],
			Escape:     rng.IntN(4) != 0,
			IgnoreTERM: rng.IntN(3) == 0,
			Zombies:    rng.IntN(3),
			Leaves:     rng.IntN(3),
		})
	}
	return spec
}

// TestTortureTruth tears down TORTURE_TRUTH randomly drawn sandboxes whose
// helpers escape into their dedicated cgroup or into one that cannot be
// proved theirs, beside SIGTERM-ignorers, zombies and bystanders that
// start later in the same cgroup. Pass: 0 survivors or every survivor
// named in a failed teardown; 0 bystanders harmed or signalled; 0
// processes left stopped.
func TestTortureTruth(t *testing.T) {
	proctest.RequireRoot(t)
	n := envInt(t, "TORTURE_TRUTH", defaultTruthTrials)
	seed := tortureSeed(t)
	rng := rand.New(rand.NewPCG(seed, 23))
	var sum truthSum
	for fleetNo := 0; sum.trials < n; fleetNo++ {
		k := min(3, n-sum.trials)
		spec := truthSpec(rng, k, fleetNo)
		cases := make([]truthCase, k)
		for i := range cases {
			c := truthCase{grace: []time.Duration{0, 150 * time.Millisecond, 400 * time.Millisecond}[rng.IntN(3)], shared: rng.IntN(2) == 0}
			c.late = c.shared && rng.IntN(2) == 0
			c.withCgroup = c.shared && rng.IntN(3) == 0
			cases[i] = c
		}
		order := rng.Perm(k)
		withRelay := rng.IntN(2) == 0
		ok := t.Run(fmt.Sprintf("fleet%d", fleetNo), func(t *testing.T) {
			f := fleettest.Start(t, spec)
			t.Cleanup(func() {
				if t.Failed() {
					js, err := json.Marshal(spec)
					t.Logf("spec: %s (%v); cases %+v", js, err, cases)
				}
			})
			for _, i := range order {
				truthTrial(t, f, spec.Sandboxes[i].Name, cases[i], &sum)
				sum.trials++
			}
			if withRelay {
				relayTrial(t, &sum)
			}
		})
		if !ok {
			break
		}
	}
	figures(t, "truth", "trials", sum.trials, "seed", seed, "suspects", sum.suspects, "late_bystanders", sum.late,
		"relays", sum.relays, "survivors_named", sum.named, "survivors_silent", sum.silent, "bystanders_harmed", sum.harmed, "left_stopped", sum.stopped)
	if sum.silent != 0 || sum.harmed != 0 || sum.stopped != 0 {
		t.Errorf("%d silent survivors, %d bystanders harmed, %d left stopped: all must be 0", sum.silent, sum.harmed, sum.stopped)
	}
}

// truthTrial tears one sandbox down and judges it.
func truthTrial(t *testing.T, f *fleet.Fleet, name string, c truthCase, sum *truthSum) {
	t.Helper()
	failedBefore := t.Failed()
	m := f.Manifest()
	target := m.Sandbox(name)
	rules := model.Effective(nil, true)
	var undo func()
	made := ""
	if c.shared {
		made, undo = shareEscape(t, target)
	}
	v := fleettest.View(t, rules)
	sb, err := v.Resolve(target.ID)
	if undo != nil && (err != nil || !attributed(v, sb, target, fleet.RoleEscaped)) {
		// A runtime known by its cgroup alone (a machine scope) has no
		// member left once moved out of it: that is a different sandbox,
		// not one whose helper escaped.
		undo()
		c.late, c.withCgroup = false, false
		v = fleettest.View(t, rules)
		sb, err = v.Resolve(target.ID)
	}
	if err != nil {
		t.Errorf("%s (%s %s) not found by the model: %v", name, target.Runtime, target.ID, err)
		return
	}
	mine := map[proc.Identity]bool{}
	for _, p := range target.Processes {
		mine[p.Identity] = true
	}
	var others []fleet.Process
	for _, p := range append(m.Processes(), m.Owner) {
		if !mine[p.Identity] && alive(p.Identity) {
			others = append(others, p)
		}
	}
	stoppedBefore := map[proc.Identity]bool{}
	for _, p := range append(others, target.Processes...) {
		if _, st, err := proc.ReadIdentity("/proc", p.PID); err == nil && (st == 'T' || st == 't') {
			stoppedBefore[p.Identity] = true
		}
	}
	eng, err := New(Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanSandbox(v, sb, PlanOptions{Grace: c.grace, Deadline: 2 * time.Second, Protected: eng.Protected(), WithCgroup: c.withCgroup})
	if err != nil {
		t.Errorf("plan %s: %v", name, err)
		return
	}
	sum.suspects += len(plan.Suspects)
	var late *lateBystander
	if c.late && made != "" {
		late = startLateBystander(t, made)
		sum.late++
	}
	var events []Event
	tot := eng.Run(context.Background(), plan, func(ev Event) { events = append(events, ev) })

	named := map[int]bool{}
	for _, s := range tot.Survivors {
		named[s.PID] = true
	}
	for _, p := range target.Processes {
		if !alive(p.Identity) {
			continue
		}
		if named[p.PID] && !tot.OK() {
			sum.named++
			continue
		}
		sum.silent++
		t.Errorf("%s (%s): %v %s (%s) survived silently", name, target.Runtime, p.Identity, p.Comm, p.Role)
	}
	for _, p := range others {
		if !alive(p.Identity) && !zombie(p.Identity) {
			sum.harmed++
			t.Errorf("%s (%s): bystander harmed: %v %s (%s)", name, target.Runtime, p.Identity, p.Comm, p.Role)
		}
	}
	if late != nil {
		if got := late.signals(); !alive(late.id) || got != "" {
			sum.harmed++
			t.Errorf("%s (%s): the bystander started later in %s was touched: alive %v, signals %q", name, target.Runtime, made, alive(late.id), got)
		}
		if !named[late.id.PID] || tot.OK() {
			t.Errorf("%s (%s): the bystander started later in %s was not named as a suspect", name, target.Runtime, made)
		}
	}
	for _, p := range append(others, target.Processes...) {
		if _, st, err := proc.ReadIdentity("/proc", p.PID); err == nil && (st == 'T' || st == 't') && !stoppedBefore[p.Identity] {
			cur, _, _ := proc.ReadIdentity("/proc", p.PID)
			if cur == p.Identity {
				sum.stopped++
				t.Errorf("%s (%s): %v %s (%s) left stopped", name, target.Runtime, p.Identity, p.Comm, p.Role)
			}
		}
	}
	if late != nil {
		late.stop(t)
	}
	if t.Failed() && !failedBefore {
		var b strings.Builder
		plan.Write(&b)
		t.Logf("plan:\n%s", b.String())
		for _, ev := range events {
			t.Logf("[%s] %s", ev.Status, ev.Text())
		}
	}
}

// relayTrial tears down a tree whose parent outside it relays job control
// (a real nsenter --fork): nothing of the tree may survive, and the relay
// must not be left stopped.
func relayTrial(t *testing.T, sum *truthSum) {
	t.Helper()
	relay, child := relayTree(t)
	v := fleettest.View(t, model.Effective(nil, true))
	eng, plan := planPID(t, v, child, PlanOptions{})
	tot := eng.Run(context.Background(), plan, func(Event) {})
	sum.relays++
	for _, m := range plan.Members {
		if alive(m.Identity) {
			sum.silent++
			t.Errorf("relay trial: %v %s survived (%+v)", m.Identity, m.Comm, tot)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if _, st, err := proc.ReadIdentity("/proc", relay.Process.Pid); err == nil && st == 'T' {
		sum.stopped++
		t.Errorf("relay trial: the relaying parent %d (nsenter) was left stopped", relay.Process.Pid)
	}
}

// shareEscape moves the sandbox's escaped helper, and the member it escaped
// from, into a new cgroup that names nothing: the shared scope a
// sandbox's processes may run in. It returns the directory ("" when the
// sandbox has no escaped helper).
func shareEscape(t *testing.T, sb *fleet.Sandbox) (string, func()) {
	t.Helper()
	esc := sb.Role(fleet.RoleEscaped)
	if len(esc) == 0 {
		return "", nil
	}
	var from []fleet.Process
	for _, p := range sb.Processes {
		if p.Role != fleet.RoleEscaped && slices.Equal(p.Argv, esc[0].Argv) {
			from = append(from, p)
		}
	}
	var pids []int
	for _, p := range append(from, esc...) {
		pids = append(pids, p.PID)
	}
	return fleettest.SharedCgroup(t, strings.ReplaceAll(sb.Name, ".", "-"), pids)
}

// attributed reports whether the model gives the sandbox every process of
// it but those with the role skip.
func attributed(v *model.View, sb *model.Sandbox, target *fleet.Sandbox, skip string) bool {
	for _, p := range target.Processes {
		if p.Role != skip && p.Role != fleet.RoleZombie && alive(p.Identity) && v.SandboxOf(p.Identity) != sb {
			return false
		}
	}
	return true
}

// lateBystander is a process started in a sandbox's shared cgroup after
// the plan, in a session of its own (as an operator's shell would be): it
// writes down every catchable signal it receives.
type lateBystander struct {
	cmd *exec.Cmd
	id  proc.Identity
	log string
}

func startLateBystander(t *testing.T, cgroupDir string) *lateBystander {
	t.Helper()
	log := filepath.Join(t.TempDir(), "signals")
	fd, err := syscall.Open(cgroupDir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	script := `for s in TERM HUP INT CONT USR1; do trap "echo $s >>$0" $s; done; while :; do sleep 0.2; done`
	cmd := exec.Command("sh", "-c", script, log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start late bystander: %v", err)
	}
	id, _, err := proc.ReadIdentity("/proc", cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return &lateBystander{cmd: cmd, id: id, log: log}
}

func (b *lateBystander) signals() string {
	got, _ := os.ReadFile(b.log)
	return strings.TrimSpace(string(got))
}

func (b *lateBystander) stop(t *testing.T) {
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
}
