package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/words"
	"github.com/sandtop/sandtop/teardown"
	"github.com/sandtop/sandtop/ui/format"
	"github.com/sandtop/sandtop/ui/theme"
)

type killOpts struct {
	pids      []int
	force     bool
	reconcile bool
	dryRun    bool
	json      bool
	grace     time.Duration
	deadline  time.Duration
	audit     string
	// withCgroup includes the suspects of an unprovable cgroup.
	withCgroup bool
}

func newKillCmd(g *globals) *cobra.Command {
	o := &killOpts{}
	cmd := &cobra.Command{
		Use:   "kill [flags] ID-or-prefix...",
		Short: "Tear down sandboxes (or a process tree) and verify nothing survives",
		Long: `Tear down each named sandbox: pin every process by pid and start time,
SIGTERM leaf first (thawing a paused sandbox first), wait the grace period,
then kill what is left (cgroup.kill for a dedicated cgroup; otherwise stop
the tree from forking and SIGKILL each process), verify with a fresh scan
that nothing survived, and clean up after an orphan.

A sandbox is named by its full ID or a unique prefix. --pid tears down the
process tree rooted at PID instead, for trees no rule knows.

Exit status: 0 when nothing of the targets survives, 1 when something
survived or a step failed, 2 for usage errors and IDs that do not resolve.`,
		Example: `  sandtop kill 7d1e2c3a                 # confirm, then tear down
  sandtop kill --dry-run 7d1e2c3a       # print the plan only
  sandtop kill --force --grace 0 7d1e   # no prompt, immediate SIGKILL
  sandtop kill --pid 4242 --json        # a process tree; events as JSON lines
  sandtop kill --force --reconcile 3f2a  # then tell the runtime (podman rm --force …)`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKill(cmd.Context(), g, o, args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
			return completeIDs(g, args, prefix), cobra.ShellCompDirectiveNoFileComp
		},
	}
	f := cmd.Flags()
	pidsFlag(f, &o.pids, "pid", "tear down the process tree rooted at this PID (repeatable)")
	f.BoolVarP(&o.force, "force", "f", false, "do not ask for confirmation")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the plan and exit")
	f.BoolVar(&o.reconcile, "reconcile", false, "after a clean teardown, run the runtime's own command so it notices (podman rm --force <id>; from the rule, shown in the plan)")
	f.BoolVar(&o.json, "json", false, "print events as JSON lines (with --dry-run: one plan a line)")
	durationFlag(f, &o.grace, "grace", teardown.DefaultGrace, graceRange, "how long to wait after SIGTERM before SIGKILL (0: SIGKILL at once)")
	durationFlag(f, &o.deadline, "deadline", teardown.DefaultDeadline, deadlineRange, "how long to keep killing newcomers before reporting survivors")
	f.BoolVar(&o.withCgroup, "with-cgroup", false, "also tear down the processes outside the tree that share its cgroups and may have started inside it (the plan's suspects, each pinned and verified)")
	f.StringVar(&o.audit, "audit-log", "", "append a JSON line per teardown here (default "+teardown.DefaultAuditPath()+")")
	_ = cmd.RegisterFlagCompletionFunc("pid", func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		return completePIDs(g, o.pids, prefix), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func runKill(ctx context.Context, g *globals, o *killOpts, args []string, in io.Reader, out, errOut io.Writer) error {
	if len(args) == 0 && len(o.pids) == 0 {
		return usageErr(errors.New("kill needs a sandbox ID (or prefix) or --pid"))
	}
	if len(args) > 0 && len(o.pids) > 0 {
		// Refused rather than guessed: a pid typed next to an ID is as
		// likely a slip as a second target.
		return usageErr(fmt.Errorf("kill takes sandbox IDs or --pid, not both (%s and --pid %v): run one kill for each", strings.Join(args, " "), o.pids))
	}
	rules, err := g.rules()
	if err != nil {
		return err
	}
	// One scanner plans and verifies, so each verify round re-reads only
	// what changed.
	sc, err := g.oneShotScanner(rules.NeedsAlike())
	if err != nil {
		return err
	}
	defer sc.Close()
	v, err := scanView(sc, rules)
	if err != nil {
		return err
	}
	eng, err := g.engine(rules, sc)
	if err != nil {
		return err
	}
	plans, err := makePlans(v, eng, o, args)
	if err != nil {
		return err
	}

	if o.dryRun {
		if o.json {
			return writePlansJSON(out, plans)
		}
		for _, p := range plans {
			p.Write(out)
		}
		return nil
	}
	if !o.force {
		if f, ok := in.(*os.File); !ok || !term.IsTerminal(f.Fd()) {
			return usageErr(errors.New("refusing to kill without a terminal to confirm on: use --force"))
		}
		if !confirm(in, out, plans) {
			return &exitError{code: exitFailure, err: errors.New("cancelled: nothing was signalled")}
		}
	}
	auditPath := o.audit
	if auditPath == "" {
		auditPath = teardown.DefaultAuditPath()
	}
	return runPlans(ctx, eng, plans, o.json, o.reconcile, auditPath, out, errOut)
}

// runPlans tears the plans down and audits each. Once it has started it
// finishes: output that fails (a pipe closed early, a terminal gone) is
// dropped, SIGPIPE and SIGHUP change nothing, the first SIGINT or SIGTERM
// only cuts the grace wait short, and a second one stops further SIGKILLs.
// The thaw, the verify and the audit record happen whatever comes.
func runPlans(ctx context.Context, eng *teardown.Engine, plans []*teardown.Plan, asJSON, reconcile bool, auditPath string, out, errOut io.Writer) error {
	lout, lerr := &lossyWriter{w: out}, &lossyWriter{w: errOut}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	endGrace := make(chan struct{})
	sigs := make(chan os.Signal, 4)
	// Notify for SIGPIPE too: without it a write to a closed pipe on
	// stdout kills a Go program outright.
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	var interrupted atomic.Bool
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if sig == syscall.SIGHUP || sig == syscall.SIGPIPE {
					continue // the output is gone; the teardown is not
				}
				n++
				switch n {
				case 1:
					interrupted.Store(true)
					close(endGrace)
					fmt.Fprintf(lerr, "sandtop: %s: no more waiting; SIGKILL, verify and the audit record follow (again: stop signalling)\n", sig)
				case 2:
					cancel()
					fmt.Fprintf(lerr, "sandtop: %s: no further signals; thawing, verifying and writing the audit record\n", sig)
				}
			}
		}
	}()

	emit := lineEmitter(lout, theme.New(lipgloss.NewRenderer(out)))
	if asJSON {
		enc := json.NewEncoder(model.JSONSafe(lout))
		emit = func(ev teardown.Event) { _ = enc.Encode(ev) }
	}
	runCtx := teardown.WithEndGrace(ctx, endGrace)
	var failed atomic.Bool
	runner := &teardown.Runner{Engine: eng, Via: "kill", Audit: auditPath, Reconcile: reconcile}
	// kept holds, per plan, why a dead sandbox's leftovers were all kept.
	kept := make([]string, len(plans))
	// The targets are torn down together, so a batch takes about one
	// grace, not one per target; each target's events are printed
	// together, in the order the targets were named.
	order := newOrderedEmit(len(plans), emit)
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxParallelTeardowns)
	for i, p := range plans {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			defer order.done(i)
			res := runner.Run(runCtx, p, order.emitter(i), "")
			if !res.OK() {
				failed.Store(true)
			}
			if res.AuditErr != nil {
				fmt.Fprintln(lerr, "sandtop: warning:", res.AuditErr)
			}
			kept[i] = keptEverything(p, res.Totals)
		}()
	}
	wg.Wait()
	if lout.failed() != nil {
		fmt.Fprintf(lerr, "sandtop: output lost (%v); the teardown went on to the end: see %s\n", lout.failed(), auditPath)
	}
	keptAll := slices.DeleteFunc(kept, func(s string) bool { return s == "" })
	if len(keptAll) > 0 && !failed.Load() {
		// Asked to remove what a dead sandbox left and removed none of it:
		// an exit of 0 would read as done.
		return &exitError{code: exitFailure, err: errors.New(strings.Join(keptAll, "\n"))}
	}
	if failed.Load() {
		msg := "teardown incomplete: see the FAIL lines above"
		if interrupted.Load() {
			msg += " (interrupted)"
		}
		return &exitError{code: exitFailure, err: errors.New(msg)}
	}
	return nil
}

// planJSON is a plan as kill --dry-run --json prints it, one JSON line
// per target: what the plan text says, with the strings a process controls
// kept as they are (the encoder escapes them).
type planJSON struct {
	Plan       string          `json:"plan"`
	Key        string          `json:"key,omitempty"`
	ID         string          `json:"id,omitempty"`
	Namespace  string          `json:"namespace,omitempty"`
	Runtime    string          `json:"runtime"`
	RootPID    int             `json:"root_pid"`
	Cgroup     string          `json:"cgroup"`
	Supervisor string          `json:"supervisor"`
	Cleanup    []string        `json:"cleanup"`
	Reconcile  []string        `json:"reconcile,omitempty"`
	Strategy   string          `json:"strategy"`
	Steps      []teardown.Step `json:"steps"`
	GraceMS    int64           `json:"grace_ms"`
	DeadlineMS int64           `json:"deadline_ms"`
	Members    []planMember    `json:"members"`
	Suspects   []planSuspect   `json:"suspects"`
}

type planMember struct {
	PID    int    `json:"pid"`
	Start  uint64 `json:"start_ticks"`
	PPID   int    `json:"ppid"`
	Comm   string `json:"comm"`
	Zombie bool   `json:"zombie,omitempty"`
	// Resists says why the process will not act on the signal it is
	// sent (teardown.Member.Resists): SIGKILLed after the grace.
	Resists string `json:"resists,omitempty"`
	// Suspect is the evidence that put a process outside the tree among
	// the members (a suspect the plan takes).
	Suspect string `json:"suspect,omitempty"`
}

// planSuspect is a process outside the tree, in a cgroup the sandbox's
// processes occupy, that may have started inside it.
type planSuspect struct {
	PID      int      `json:"pid"`
	Start    uint64   `json:"start_ticks"`
	PPID     int      `json:"ppid"`
	Comm     string   `json:"comm"`
	Cgroup   string   `json:"cgroup"`
	Evidence []string `json:"evidence"`
	// Taken says the plan signals it (its cgroup names the sandbox, or
	// --with-cgroup); Fate says so in words.
	Taken bool   `json:"taken"`
	Fate  string `json:"fate"`
}

func writePlansJSON(w io.Writer, plans []*teardown.Plan) error {
	enc := json.NewEncoder(model.JSONSafe(w))
	for _, p := range plans {
		f := p.Facts()
		doc := planJSON{Plan: p.Target, Key: p.Key, Runtime: p.Runtime,
			RootPID: p.RootPID, Cgroup: f.Cgroup, Supervisor: f.Supervisor, Cleanup: f.CleanupPaths,
			Reconcile: p.Reconcile, Strategy: f.Strategy, Steps: f.Steps,
			GraceMS: p.Grace.Milliseconds(), DeadlineMS: p.Deadline.Milliseconds(), Members: []planMember{}, Suspects: []planSuspect{}}
		if p.Sandbox != nil {
			doc.ID, doc.Namespace = p.Sandbox.ID, p.Sandbox.Namespace
		}
		for _, m := range p.Members {
			doc.Members = append(doc.Members, planMember{PID: m.PID, Start: m.Start, PPID: m.PPID, Comm: m.Comm, Zombie: m.Zombie, Resists: m.Resists, Suspect: m.Suspect})
		}
		for _, s := range p.Suspects {
			doc.Suspects = append(doc.Suspects, planSuspect{PID: s.PID, Start: s.Start, PPID: s.PPID, Comm: s.Comm, Cgroup: s.Cgroup,
				Evidence: s.Evidence, Taken: p.Included(s), Fate: p.SuspectFate(s)})
		}
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("plan: %w", err)
		}
	}
	return nil
}

// lossyWriter passes writes on until the first error, then drops them and
// keeps that error: a teardown never stops because its output cannot go
// anywhere. Safe for the signal goroutine and the teardown to share.
type lossyWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (l *lossyWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		_, l.err = l.w.Write(b)
	}
	return len(b), nil
}

func (l *lossyWriter) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// makePlans resolves every argument before anything is signalled: one
// unknown ID or ambiguous prefix fails the whole command.
func makePlans(v *model.View, eng *teardown.Engine, o *killOpts, args []string) ([]*teardown.Plan, error) {
	po := teardown.PlanOptions{Grace: o.grace, Deadline: o.deadline, Protected: eng.Protected(), WithCgroup: o.withCgroup}
	po.ProcRoot = eng.ProcRoot()
	var plans []*teardown.Plan
	seen := map[string]bool{}
	for _, a := range args {
		sb, err := v.Resolve(a)
		if err != nil {
			return nil, usageErr(err)
		}
		if seen[sb.Key()] {
			continue
		}
		seen[sb.Key()] = true
		p, err := teardown.PlanSandbox(v, sb, po)
		if err != nil {
			return nil, usageErr(err)
		}
		plans = append(plans, p)
	}
	for _, pid := range o.pids {
		p, err := teardown.PlanSubtree(v, pid, po)
		if err != nil {
			return nil, usageErr(err)
		}
		plans = append(plans, p)
	}
	return plans, nil
}

func confirm(in io.Reader, out io.Writer, plans []*teardown.Plan) bool {
	n := 0
	for _, p := range plans {
		p.Write(out)
		fmt.Fprintln(out)
		n += len(p.Members)
	}
	fmt.Fprintf(out, "Tear down %s, %s? [y/N] ", format.Count(len(plans), "target", "targets"), format.Count(n, "process", "processes"))
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// lineEmitter prints one line per event, as the vm0 runner's kill does:
// "[OK]   term        1234 firecracker", "[FAIL] kill        99: EPERM (needs root)".
func lineEmitter(w io.Writer, st *theme.Theme) func(teardown.Event) {
	return func(ev teardown.Event) {
		pad := strings.Repeat(" ", max(0, 6-len(ev.Status)-2))
		fmt.Fprintln(w, st.Step(ev.Status)+pad+" "+ev.Text())
	}
}

// completionView is the live view and the names the list shows, for a
// completion; an empty view when the host cannot be scanned (a completion
// then offers nothing rather than an error in the middle of a command line).
func completionView(g *globals) (*model.View, map[*model.Sandbox]string) {
	v, err := g.view(false, nil)
	if err != nil {
		return &model.View{}, nil
	}
	return v, v.ShortNames(model.MinShortID)
}

// completePIDs offers the pids of sandbox members that start with prefix,
// each described by its command and the sandbox it belongs to, so `--pid
// <TAB>` finds a tree inside a sandbox without a trip through ps.
func completePIDs(g *globals, already []int, prefix string) []string {
	var out []string
	v, names := completionView(g)
	for _, sb := range v.Sandboxes {
		for _, m := range sb.Members {
			pid := strconv.Itoa(m.PID)
			if !strings.HasPrefix(pid, prefix) || slices.Contains(already, m.PID) {
				continue
			}
			out = append(out, pid+"\t"+model.Printable(m.Comm+" in "+names[sb]+" ("+sb.Runtime+")"))
		}
	}
	return out
}

// completeIDs offers the live sandbox IDs that start with prefix, each
// described by its runtime and badges (shells that show descriptions do).
// An ID a terminal would act on is not offered: the shell would put it on
// the command line raw.
func completeIDs(g *globals, already []string, prefix string) []string {
	var out []string
	v, names := completionView(g)
	for _, sb := range v.Sandboxes {
		name := v.FullName(sb)
		if prefix != "" && !sb.HasNamePrefix(prefix, strings.HasPrefix) || slices.Contains(already, name) || slices.Contains(already, names[sb]) ||
			!model.IsPrintable(name) {
			continue
		}
		if !strings.HasPrefix(name, prefix) {
			// Typed without its namespace or runtime, or as an alias: the
			// shell keeps only words that start with what was typed.
			name = firstWithPrefix(prefix, append([]string{sb.Name(), sb.ID}, sb.Aliases...)...)
		}
		desc := sb.Runtime + ", " + format.Count(len(sb.Members), "process", "processes")
		if len(sb.Badges) > 0 {
			desc += ", " + badges(sb.Badges)
		}
		out = append(out, name+"\t"+model.Printable(desc))
	}
	return out
}

// firstWithPrefix returns the first of names that starts with prefix, or "".
func firstWithPrefix(prefix string, names ...string) string {
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			return n
		}
	}
	return ""
}

// keptEverything says why a plan of a sandbox with no process left removed
// none of its leftovers, and what to do instead; "" when it removed
// something or was no such plan.
func keptEverything(p *teardown.Plan, t teardown.Totals) string {
	if !p.LeftoverOnly() || len(t.Leftovers) == 0 {
		return ""
	}
	var why []string
	for _, l := range t.Leftovers {
		if l.Status == teardown.OK {
			return ""
		}
		if d := model.Printable(l.Detail); !slices.Contains(why, d) {
			why = append(why, d)
		}
	}
	// The target and the leftovers' paths are the processes' choice.
	return fmt.Sprintf("nothing of %s was removed (%s): %s; remove it when that no longer holds (sandtop list shows why each is kept), or let its owner clean up",
		model.Printable(p.Target), words.Count(len(t.Leftovers), "leftover kept", "leftovers kept"), strings.Join(why, "; "))
}
