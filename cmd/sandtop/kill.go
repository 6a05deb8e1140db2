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
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/teardown"
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
	f.IntSliceVar(&o.pids, "pid", nil, "tear down the process tree rooted at this PID (repeatable)")
	f.BoolVarP(&o.force, "force", "f", false, "do not ask for confirmation")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the plan and exit")
	f.BoolVar(&o.reconcile, "reconcile", false, "after a clean teardown, run the runtime's own command so it notices (podman rm --force <id>; from the rule, shown in the plan)")
	f.BoolVar(&o.json, "json", false, "print events as JSON lines")
	f.DurationVar(&o.grace, "grace", teardown.DefaultGrace, "how long to wait after SIGTERM before SIGKILL (0: SIGKILL at once)")
	f.DurationVar(&o.deadline, "deadline", teardown.DefaultDeadline, "how long to keep killing newcomers before reporting survivors")
	f.StringVar(&o.audit, "audit-log", "", "append a JSON line per teardown here (default "+teardown.DefaultAuditPath()+")")
	return cmd
}

func runKill(ctx context.Context, g *globals, o *killOpts, args []string, in io.Reader, out, errOut io.Writer) error {
	if len(args) == 0 && len(o.pids) == 0 {
		return usageErr(errors.New("kill needs a sandbox ID (or prefix) or --pid"))
	}
	rules, err := g.rules()
	if err != nil {
		return err
	}
	// One scanner plans and verifies, so each verify round re-reads only
	// what changed.
	sc, err := g.scanner()
	if err != nil {
		return err
	}
	defer sc.Close()
	v, err := scanView(sc, rules)
	if err != nil {
		return err
	}
	eng, err := teardown.New(teardown.Options{ProcRoot: g.procRoot, SysRoot: g.sysRoot, Rules: rules, Scanner: sc})
	if err != nil {
		return err
	}
	plans, err := makePlans(v, eng, o, args)
	if err != nil {
		return err
	}

	if o.dryRun {
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
			fmt.Fprintln(out, "cancelled: nothing was signalled")
			return nil
		}
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	auditPath := o.audit
	if auditPath == "" {
		auditPath = teardown.DefaultAuditPath()
	}
	emit := lineEmitter(out, theme.New(lipgloss.NewRenderer(out)))
	if o.json {
		enc := json.NewEncoder(out)
		emit = func(ev teardown.Event) { _ = enc.Encode(ev) }
	}
	failed := false
	for _, p := range plans {
		t := eng.Run(ctx, p, emit)
		failed = failed || !t.OK()
		if o.reconcile && len(p.Reconcile) > 0 {
			if !t.OK() {
				emit(teardown.Event{Time: time.Now(), Sandbox: p.Target, Step: teardown.StepReconcile, Status: teardown.Skip,
					Detail: "processes survive or a step failed: " + p.Runtime + " is not told"})
			} else if ev := teardown.RunReconcile(ctx, p, emit); ev.Status == teardown.Fail {
				failed = true
			}
		}
		if err := teardown.AppendAudit(auditPath, teardown.NewAuditRecord("kill", p, t)); err != nil {
			fmt.Fprintln(errOut, "sandtop: warning:", err)
		}
	}
	if failed {
		return &exitError{code: exitFailure, err: errors.New("teardown incomplete: see the FAIL lines above")}
	}
	return nil
}

// makePlans resolves every argument before anything is signalled: one
// unknown ID or ambiguous prefix fails the whole command.
func makePlans(v *model.View, eng *teardown.Engine, o *killOpts, args []string) ([]*teardown.Plan, error) {
	po := teardown.PlanOptions{Grace: o.grace, Deadline: o.deadline, Protected: eng.Protected()}
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
	fmt.Fprintf(out, "Tear down %d target(s), %d processes? [y/N] ", len(plans), n)
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

// completeIDs offers the live sandbox IDs that start with prefix, each
// described by its runtime and badges (shells that show descriptions do).
func completeIDs(g *globals, already []string, prefix string) []string {
	v, err := g.view()
	if err != nil {
		return nil
	}
	var out []string
	names := v.ShortNames(model.MinShortID)
	for _, sb := range v.Sandboxes {
		name := v.FullName(sb)
		if !strings.HasPrefix(name, prefix) && !strings.HasPrefix(sb.ID, prefix) || slices.Contains(already, name) || slices.Contains(already, names[sb]) {
			continue
		}
		desc := fmt.Sprintf("%s, %d processes", sb.Runtime, len(sb.Members))
		if len(sb.Badges) > 0 {
			desc += ", " + badges(sb.Badges)
		}
		out = append(out, name+"\t"+desc)
	}
	return out
}
