package teardown

import (
	"fmt"
	"io"
	"strings"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/words"
	"github.com/sandtop/sandtop/proc"
)

// Facts are what a teardown will do, in the words an operator confirms:
// the one source for the CLI's plan (kill --dry-run and its prompt), the
// live screen's confirmation and its detail pane. Each renders these
// values; none words them again.
type Facts struct {
	// Title names the target as a question names it: "sandbox ID", or
	// "pid N and its descendants".
	Title   string
	Runtime string
	// Root is the root process: "pid N comm".
	Root string
	// Processes counts the target's processes; Zombies those of them that
	// have already exited.
	Processes, Zombies int
	// Cgroup is the dedicated cgroup and how it is used, or "none
	// dedicated", why, and what is done instead.
	Cgroup string
	// State is the target's paused state and what the teardown does about
	// it; "" when it is running.
	State string
	// Supervisor is who owns the target, or that nobody does.
	Supervisor string
	// Cleanup says what is removed after the kill, and CleanupPaths lists
	// the paths.
	Cleanup      string
	CleanupPaths []string
	// Reconcile is the runtime's own command that makes it notice the
	// kill, and when it runs; "" when the runtime notices by itself.
	Reconcile string
	// Suspects name each process outside the tree that may have started
	// inside it, why, and whether it is signalled (see Suspect).
	Suspects []string
	// Resisters name each process that will not act on the signal it is
	// sent (see Member.Resists) and what becomes of it ("ignores SIGTERM:
	// pid 123 worker: will be SIGKILLed after the 5s grace").
	Resisters []string
	// Strategy is how the processes are stopped.
	Strategy string
	// Steps are the steps that will run, in order.
	Steps []Step
}

// Root is the plan's root process: the last member (members are leaf
// first).
func (p *Plan) Root() Member {
	if len(p.Members) == 0 {
		return Member{}
	}
	return p.Members[len(p.Members)-1]
}

// Facts returns what the plan will do (see Facts).
func (p *Plan) Facts() Facts {
	f := Facts{
		Title:      p.Target,
		Runtime:    p.Runtime,
		Root:       fmt.Sprintf("pid %d", p.RootPID),
		Processes:  len(p.Members),
		Supervisor: strings.TrimPrefix(p.SupervisorNote, "supervisor "),
		Strategy:   p.Strategy(),
		Steps:      p.Steps(),
	}
	if p.Sandbox != nil {
		f.Title = "sandbox " + p.Target
	} else {
		f.Title = p.Target + " and its descendants"
	}
	if p.LeftoverOnly() {
		return p.leftoverFacts(f)
	}
	root := p.Root()
	if root.Comm != "" {
		f.Root += " " + root.Comm
	}
	for _, m := range p.Members {
		if m.Zombie {
			f.Zombies++
		}
	}
	switch {
	case p.Cgroup != "" && p.Freezer != "":
		f.Cgroup = p.Cgroup + " (dedicated: cgroup.kill); v1 freezer " + p.Freezer + " (dedicated: thawed after the kill)"
	case p.Cgroup != "":
		f.Cgroup = p.Cgroup + " (dedicated: cgroup.kill)"
	case p.Freezer != "":
		f.Cgroup = "v1 freezer " + p.Freezer + " (dedicated: freeze, kill, thaw)"
	case p.Sandbox == nil:
		f.Cgroup = "none: a process subtree owns no cgroup; SIGSTOP the tree, then SIGKILL each process"
	case root.Cgroup != "":
		f.Cgroup = "none dedicated (" + root.Cgroup + " is not the sandbox's own): SIGSTOP the tree, then SIGKILL each process"
	default:
		f.Cgroup = "none dedicated: SIGSTOP the tree, then SIGKILL each process"
	}
	switch {
	case p.Frozen:
		f.State = "paused (frozen)"
		if p.Grace > 0 {
			f.State += ": thawed first, so SIGTERM can be handled"
		}
	case p.Sandbox != nil && p.Sandbox.Paused:
		// Paused without a freezer: its processes are stopped, and a
		// stopped process keeps SIGTERM pending until it is continued.
		f.State = "paused (stopped by SIGSTOP)"
		if p.Grace > 0 {
			f.State += ": each SIGTERM is followed by SIGCONT, so it can be handled"
		}
	}
	if len(p.Reconcile) > 0 {
		f.Reconcile = p.reconcileCommand() + " (" + p.Runtime + " may not notice a kill behind its back; printed after the kill, run by kill --reconcile)"
	}
	for _, m := range p.Members {
		if m.Resists != "" {
			f.Resisters = append(f.Resisters, fmt.Sprintf("%s: pid %d %s: %s", m.Resists, m.PID, m.Comm, p.resisterFate()))
		}
	}
	for _, s := range p.Suspects {
		f.Suspects = append(f.Suspects, fmt.Sprintf("pid %d %s: %s: %s", s.PID, s.Comm, s.Why(), p.SuspectFate(s)))
	}
	switch {
	case p.Supervised:
		f.Cleanup = "left to the supervisor"
	case len(p.Cleanup) > 0:
		f.Cleanup = "orphan: then removes " + strings.Join(p.Cleanup, ", ")
		f.CleanupPaths = p.Cleanup
	default:
		f.Cleanup = "nothing to remove"
	}
	if !p.Supervised && len(p.CleanupRefused) > 0 {
		f.Cleanup += "; " + p.cleanupRefusedText()
	}
	return f
}

// SuspectFate says what the teardown does with a suspect.
func (p *Plan) SuspectFate(s Suspect) string {
	switch {
	case s.Provable:
		return "taken, like a member"
	case p.WithCgroup:
		return "taken (the cgroup's other processes are included)"
	}
	return includeHint
}

// leftoverFacts are the facts of a sandbox with no process left: nothing
// is signalled, and its leftovers are removed or kept.
func (p *Plan) leftoverFacts(f Facts) Facts {
	f.Root = "none: no process left"
	var cgroups, rm, rmText, keep []string
	for _, l := range p.Leftovers {
		if l.Kind == proc.KindCgroup {
			cgroups = append(cgroups, l.Path)
		}
		if l.Removable() {
			rm = append(rm, l.Path)
			rmText = append(rmText, string(l.Kind)+" "+l.Path)
		} else {
			keep = append(keep, string(l.Kind)+" "+l.Path+" ("+l.Keep+")")
		}
	}
	f.Cgroup = "none dedicated"
	if len(cgroups) > 0 {
		f.Cgroup = "leftover " + strings.Join(cgroups, ", ") + " (removed only when empty)"
	}
	switch {
	case len(rm) > 0 && len(keep) > 0:
		f.Cleanup = "leftovers: removes " + strings.Join(rmText, ", ") + "; keeps " + strings.Join(keep, ", ")
	case len(rm) > 0:
		f.Cleanup = "leftovers: removes " + strings.Join(rmText, ", ")
	default:
		f.Cleanup = "leftovers: keeps " + strings.Join(keep, ", ")
	}
	f.CleanupPaths = rm
	return f
}

// cleanupRefusedText says which cleanup paths are refused, and why.
func (p *Plan) cleanupRefusedText() string {
	return "not removed: " + strings.Join(p.CleanupRefused, "; ")
}

// StepsText is the steps joined by arrows: "pin → term → …".
func (f Facts) StepsText() string {
	s := make([]string, len(f.Steps))
	for i, st := range f.Steps {
		s[i] = string(st)
	}
	return strings.Join(s, " → ")
}

// ProcessesText is the processes line: "12 processes (1 zombie)".
func (f Facts) ProcessesText() string {
	s := words.Count(f.Processes, "process", "processes")
	if f.Zombies > 0 {
		s += " (" + words.Count(f.Zombies, "zombie", "zombies") + ")"
	}
	return s
}

// Write prints the plan for a person: what --dry-run shows and what the
// confirmation asks about.
func (p *Plan) Write(w io.Writer) {
	f := p.Facts()
	line := func(k, v string) { fmt.Fprintf(w, "%-11s %s\n", k+":", model.Printable(v)) }
	line("target", fmt.Sprintf("%s (%s), root %s, %s", f.Title, f.Runtime, f.Root, f.ProcessesText()))
	line("cgroup", f.Cgroup)
	if f.State != "" {
		line("state", f.State)
	}
	line("supervisor", f.Supervisor)
	if p.Sandbox != nil && len(p.Sandbox.Conflicts) > 0 {
		line("conflict", p.Sandbox.ConflictText())
	}
	line("cleanup", f.Cleanup)
	if f.Reconcile != "" {
		line("reconcile", f.Reconcile)
	}
	line("strategy", f.Strategy)
	line("steps", f.StepsText())
	for _, r := range f.Resisters {
		line("resists", r)
	}
	if len(f.Suspects) > 0 {
		fmt.Fprintf(w, "suspects (outside the tree, in its cgroups):\n")
		for _, s := range f.Suspects {
			fmt.Fprintf(w, "  %s\n", model.Printable(s))
		}
	}
	fmt.Fprintf(w, "processes (leaf first):\n")
	for _, m := range p.Members {
		z := ""
		if m.Zombie {
			z = " (zombie)"
		}
		if m.Suspect != "" {
			z = " (suspect)"
		}
		fmt.Fprintf(w, "  %s%d %s%s\n", strings.Repeat("  ", m.Depth), m.PID, model.Printable(m.Comm), z)
	}
}
