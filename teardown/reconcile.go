package teardown

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// reconcileTimeout bounds one run of a runtime's reconcile command.
const reconcileTimeout = 30 * time.Second

// reconcileTries is how often the command is run before it counts as
// failed: a runtime told after the fact may need a second word (podman's
// first rm --force waits 5 s for conmon's exit file, gives up and marks
// the container exited; the second removes it).
const reconcileTries = 2

// RunReconcile runs the plan's reconcile command, the runtime's own way to
// notice a sandbox killed behind its back, and reports it as one event. It
// runs only what the sandbox's rule says (Plan.Reconcile), never anything
// taken from a process's argv beyond the rule's captures, and without a
// shell.
func RunReconcile(ctx context.Context, p *Plan, emit func(Event)) Event {
	ev := Event{Time: time.Now(), Sandbox: p.Target, Step: StepReconcile}
	if len(p.Reconcile) == 0 {
		ev.Status, ev.Detail = Skip, p.Runtime+" notices by itself: nothing to run"
		emit(ev)
		return ev
	}
	var out []byte
	var err error
	for try := 1; try <= reconcileTries; try++ {
		cctx, cancel := context.WithTimeout(ctx, reconcileTimeout)
		cmd := exec.CommandContext(cctx, p.Reconcile[0], p.Reconcile[1:]...)
		if err = asOwner(cmd, p); err == nil {
			out, err = cmd.CombinedOutput()
		}
		cancel()
		if err == nil || ctx.Err() != nil || errors.Is(err, exec.ErrNotFound) || cmd.Process == nil {
			break
		}
	}
	ev.Time = time.Now()
	msg := lastLine(out)
	switch {
	case err != nil:
		ev.Status = Fail
		ev.Detail = fmt.Sprintf("%s: %v", p.reconcileCommand(), err)
		if msg != "" {
			ev.Detail += ": " + msg
		}
	default:
		ev.Status, ev.Detail = OK, "ran "+p.reconcileCommand()
		if msg != "" {
			ev.Detail += ": " + msg
		}
	}
	emit(ev)
	return ev
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
