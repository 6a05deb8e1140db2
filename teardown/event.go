package teardown

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sandtop/sandtop/model"
)

// Step names a step of a teardown.
type Step string

// The steps, in the order a teardown runs them.
const (
	StepPlan       Step = "plan"
	StepPin        Step = "pin"
	StepThaw       Step = "thaw"
	StepTerm       Step = "term"
	StepWait       Step = "wait"
	StepFreeze     Step = "freeze"
	StepStop       Step = "stop"
	StepKill       Step = "kill"
	StepCgroupKill Step = "cgroup-kill"
	StepVerify     Step = "verify"
	// StepResume continues a process outside the target that stopped
	// itself when its child was stopped (a job-control relay).
	StepResume  Step = "resume"
	StepCleanup Step = "cleanup"
	StepDone    Step = "done"
	// StepReconcile runs the runtime's own command after a teardown
	// (kill --reconcile), outside Run.
	StepReconcile Step = "reconcile"
)

// Status is a step's outcome.
type Status string

// Step outcomes.
const (
	OK   Status = "ok"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Event is one step's result, emitted as it happens.
type Event struct {
	Time    time.Time `json:"time"`
	Sandbox string    `json:"sandbox"`
	Step    Step      `json:"step"`
	PID     int       `json:"pid,omitempty"`
	Comm    string    `json:"comm,omitempty"`
	Signal  string    `json:"signal,omitempty"`
	Status  Status    `json:"status"`
	// Error is the errno name (EPERM, ESRCH, …) when the step failed on one.
	Error  string `json:"error,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Totals is set on the done event only.
	Totals *Totals `json:"totals,omitempty"`
	// Reconcile, on the done event, is the runtime's own command to run
	// so that it notices the kill (podman rm --force <id>).
	Reconcile []string `json:"reconcile,omitempty"`
}

// Totals sums up a teardown.
type Totals struct {
	// Killed counts target processes that died during the teardown.
	Killed int `json:"killed"`
	// AlreadyGone counts target processes that had exited (or were zombies)
	// before they could be signalled.
	AlreadyGone int        `json:"already_gone"`
	Survivors   []Survivor `json:"survivors"`
	// Unreaped are the target's zombies whose parent, outside the target,
	// has not reaped them: dead, but listed until that parent waits.
	Unreaped []Survivor `json:"unreaped,omitempty"`
	// Failed counts steps that failed.
	Failed int `json:"failed_steps"`
	// Leftovers says, for a sandbox with no process left, what became of
	// each thing it left, in the order they were taken.
	Leftovers []LeftoverResult `json:"leftovers,omitempty"`
	// Stopped says when the operator stopped the teardown ("during the
	// grace, before SIGKILL"); empty when it ran to its end.
	Stopped string `json:"stopped,omitempty"`
	// Passes counts kill passes: 1 for the forced phase, one more for
	// each verify round that found processes left (forked meanwhile) and
	// killed them; 0 when nothing was killed (a cancelled or leftover-only
	// teardown). StopPasses counts the SIGSTOP walk's passes over the tree
	// (0 when cgroup.kill or the freezer did it).
	Passes     int           `json:"passes"`
	StopPasses int           `json:"stop_passes"`
	Elapsed    time.Duration `json:"-"`
}

// MarshalJSON renders Elapsed in milliseconds, which is what people read.
func (t Totals) MarshalJSON() ([]byte, error) {
	type plain Totals
	if t.Survivors == nil {
		t.Survivors = []Survivor{} // "survivors": [], never null
	}
	return json.Marshal(struct {
		plain
		ElapsedMS float64 `json:"elapsed_ms"`
	}{plain(t), float64(t.Elapsed.Microseconds()) / 1000})
}

// LeftoverResult is what a teardown did with one leftover.
type LeftoverResult struct {
	Kind string `json:"kind"`
	Path string `json:"path"`
	// Netns is a link's network namespace ("" for the host's).
	Netns string `json:"netns,omitempty"`
	// Status is ok (removed, or already gone), skip (kept) or fail.
	Status Status `json:"status"`
	Detail string `json:"detail"`
}

// Survivor is a process of the target that is still alive at the end, and why.
type Survivor struct {
	PID    int    `json:"pid"`
	Comm   string `json:"comm"`
	Reason string `json:"reason"`
	// Cause names the reason for programs: "uninterruptible" (state D),
	// "frozen", "not-pinned", "signal-failed", "stopped-by-operator",
	// "suspect", "unreaped" (a zombie), or "alive".
	Cause string `json:"cause,omitempty"`
	// State is the one-letter state the last scan read; Wchan, for a
	// process in D, the kernel function it waits in.
	State string `json:"state,omitempty"`
	Wchan string `json:"wchan,omitempty"`
}

// OK reports whether nothing of the target survived and no step failed.
func (t *Totals) OK() bool { return len(t.Survivors) == 0 && t.Failed == 0 }

// Text is the event as one line without its status: the step name in a
// column of its own, then the process the step acted on and the detail
// ("kill        99 sleep: EPERM (needs root)"), or the detail alone for a
// step about the whole target ("verify      fresh scan: nothing remains").
// What a process controls in it (its comm, paths, IDs) is escaped
// (model.Printable): the line goes to terminals and logs.
func (ev Event) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s ", ev.Step)
	subject := ""
	if ev.PID != 0 {
		subject = strconv.Itoa(ev.PID)
	}
	if ev.Comm != "" {
		subject = strings.TrimSpace(subject + " " + ev.Comm)
	}
	b.WriteString(subject)
	sep := ""
	if subject != "" {
		sep = ": "
	}
	switch {
	case ev.Error != "":
		fmt.Fprintf(&b, "%s%s (%s)", sep, ev.Error, ev.Detail)
	case ev.Detail != "":
		b.WriteString(sep + ev.Detail)
	}
	return model.Printable(strings.TrimRight(b.String(), " "))
}
