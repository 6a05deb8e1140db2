package teardown

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// reconcileTimeout bounds one run of a runtime's reconcile or inspect
// command.
const reconcileTimeout = 30 * time.Second

// reconcileTries is how often the reconcile command is run before it
// counts as failed: the runtime's own cleanup may race it (podman's
// conmon runs `podman container cleanup` when the container dies, and
// podman refuses a second hand on a container in mid-change with
// "container state improper"), and a runtime told after the fact may need
// a second word (podman's first rm --force of a container whose conmon
// died waits 5 s for an exit file, gives up and marks it exited; the
// second removes it).
const reconcileTries = 3

// reconcileSettle bounds the wait, between two tries, for the runtime's
// view to settle (two reads alike, neither in a transitional state).
const reconcileSettle = 5 * time.Second

// reconcilePoll paces the reads while waiting for the view to settle.
const reconcilePoll = 250 * time.Millisecond

// RunReconcile runs the plan's reconcile command, the runtime's own way to
// notice a sandbox killed behind its back, then asks the runtime what it
// now sees (the plan's inspect command) and quotes it; it reports both as
// one event. A failed try is retried once the runtime's view has settled.
// A failure that says the job is done already ("no such container",
// "container state improper: stopped") counts as success only when the
// runtime then shows the sandbox not running. It runs only what the
// sandbox's rule says (Plan.Reconcile, Plan.Inspect), never anything taken
// from a process's argv beyond the rule's captures, and without a shell.
func RunReconcile(ctx context.Context, p *Plan, emit func(Event)) Event {
	ev := Event{Time: time.Now(), Sandbox: p.Target, Step: StepReconcile}
	if len(p.Reconcile) == 0 {
		ev.Status, ev.Detail = Skip, p.Runtime+" notices by itself: nothing to run"
		emit(ev)
		return ev
	}
	var (
		out   []byte
		err   error
		tries int
	)
	for tries = 1; ; tries++ {
		var ran bool
		out, ran, err = runtimeCommand(ctx, p, p.Reconcile)
		if err == nil || ctx.Err() != nil || errors.Is(err, exec.ErrNotFound) || !ran || tries == reconcileTries {
			break
		}
		settleView(ctx, p)
	}
	view := askRuntime(ctx, p)
	ev.Time = time.Now()
	msg := lastLine(out)
	ran := p.reconcileCommand()
	if tries > 1 {
		ran += fmt.Sprintf(" (%d tries)", tries)
	}
	switch {
	case err == nil && view.live():
		ev.Status = Fail
		ev.Detail = "ran " + ran + withMsg(msg) + "; but " + view.String()
	case err == nil:
		ev.Status, ev.Detail = OK, "ran "+ran+withMsg(msg)
		if view.asked {
			ev.Detail += "; " + view.String()
		}
	case alreadyDone.MatchString(msg) && view.known() && !view.live():
		ev.Status = OK
		ev.Detail = "ran " + ran + ": " + msg + ": nothing left to tell it; " + view.String()
	default:
		ev.Status = Fail
		ev.Detail = fmt.Sprintf("%s: %v%s", ran, err, withMsg(msg))
		if view.asked {
			ev.Detail += "; " + view.String()
		}
	}
	emit(ev)
	return ev
}

func withMsg(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// alreadyDone matches a runtime's refusal that means the work is done
// already: the container is gone, or already stopped. It counts only
// with the runtime's own view to confirm it.
var alreadyDone = regexp.MustCompile(`(?i)no such (container|object)|does not exist|not found|already (stopped|removed|exited)|state improper: (stopped|exited)|not running|is not running`)

// gone matches an inspect command's failure that says the runtime no
// longer knows the sandbox.
var gone = regexp.MustCompile(`(?i)no such (container|object)|does not exist|not found`)

// runtimeCommand runs argv, bounded, as the plan's reconcile owner (see
// asOwner), and returns its combined output; ran is false when it could
// not be run as that owner.
func runtimeCommand(ctx context.Context, p *Plan, argv []string) (out []byte, ran bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	if err := asOwner(cmd, p); err != nil {
		return nil, false, err
	}
	out, err = cmd.CombinedOutput()
	return out, cmd.Process != nil, err
}

// runtimeView is what the runtime's inspect command said.
type runtimeView struct {
	asked bool
	cmd   string
	// status is the state the runtime reports ("running", "exited");
	// exitCode its recorded exit code, when it gives one.
	status   string
	exitCode *int
	// forgotten is set when the runtime no longer knows the sandbox.
	forgotten bool
	// said is the command's own last line when no state could be read.
	said string
}

// liveStates are the states in which a runtime still counts a sandbox as
// live; transitional ones are those a runtime passes through on its way
// to another (its own cleanup at work).
var (
	liveStates         = map[string]bool{"running": true, "paused": true, "created": true, "restarting": true, "stopping": true, "pausing": true, "removing": true}
	transitionalStates = map[string]bool{"stopping": true, "pausing": true, "removing": true, "restarting": true}
)

func (v runtimeView) known() bool { return v.forgotten || v.status != "" }
func (v runtimeView) live() bool  { return liveStates[v.status] }

// String quotes the runtime: its state, or its own words.
func (v runtimeView) String() string {
	switch {
	case v.status != "":
		s := fmt.Sprintf("%s says: status %q", v.cmd, v.status)
		if v.exitCode != nil && !v.live() {
			s += fmt.Sprintf(" (exit code %d)", *v.exitCode)
		}
		return s
	case v.said != "":
		return v.cmd + " says: " + v.said
	}
	return v.cmd + " says nothing"
}

// askRuntime runs the plan's inspect command and reads the runtime's view
// of the sandbox: the status of `podman/docker container inspect` (a list
// of objects with "State": {"Status", "ExitCode"}) or of `runc/crun
// state` (an object with "status"), or that it no longer knows it.
func askRuntime(ctx context.Context, p *Plan) runtimeView {
	if len(p.Inspect) == 0 {
		return runtimeView{}
	}
	v := runtimeView{asked: true, cmd: ShellQuote(p.Inspect)}
	out, _, err := runtimeCommand(ctx, p, p.Inspect)
	if err != nil {
		v.said = lastLine(out)
		if v.said == "" {
			v.said = err.Error()
		}
		v.forgotten = gone.MatchString(v.said)
		return v
	}
	v.status, v.exitCode = parseRuntimeState(out)
	if v.status == "" {
		v.said = lastLine(out)
	}
	return v
}

// settleView waits, bounded, until two reads of the runtime's view agree
// and neither is transitional; without an inspect command it waits one
// poll interval.
func settleView(ctx context.Context, p *Plan) {
	wait := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	if len(p.Inspect) == 0 {
		wait(4 * reconcilePoll)
		return
	}
	deadline := time.Now().Add(reconcileSettle)
	prev := askRuntime(ctx, p)
	for time.Now().Before(deadline) && wait(reconcilePoll) {
		cur := askRuntime(ctx, p)
		if cur.String() == prev.String() && !transitionalStates[cur.status] {
			return
		}
		prev = cur
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(bytes.ToValidUTF8(b, []byte("?")))), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// ShellQuote renders argv as a command line a person can paste into a
// POSIX shell.
func ShellQuote(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+%") == "" {
			parts[i] = a
			continue
		}
		parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(parts, " ")
}
