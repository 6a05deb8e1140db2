package ui

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
	"github.com/sandtop/sandtop/ui/format"
)

// detailKeyW is the width of the key column of the detail pane.
const detailKeyW = 11

// timeLayout is how absolute times are shown: local time, to the second.
const timeLayout = "2006-01-02 15:04:05"

// detail renders the detail pane for the selected row: everything sandtop
// knows about the sandbox or process, so an operator can tell why it was
// grouped, badged or left alone before touching it.
type detail struct {
	styles *Styles
}

// content is the pane's title and lines for a row, wrapped to inner cells.
func (d detail) content(r *row, c *rowCtx, inner int) (string, []string) {
	switch {
	case r == nil || c.view == nil:
		return "details", []string{"nothing selected"}
	case r.kind == rowSandbox:
		return d.sandbox(r.sb, c, inner)
	case r.kind == rowHost:
		return "host", []string{
			fmt.Sprintf("%s in no sandbox on %s", format.Count(r.st.procs, "process", "processes"), format.Printable(c.view.Host)),
			"expand the group to see them; K on one tears down its subtree",
		}
	}
	return d.process(r, c, inner)
}

// height is how many rows the pane needs for a row, border included.
func (d detail) height(r *row, c *rowCtx, w int) int {
	_, lines := d.content(r, c, max(w-4, 1))
	return len(lines) + 3
}

// view draws the pane in exactly w×h cells, border included.
func (d detail) view(r *row, c *rowCtx, w, h int) string {
	inner := max(w-4, 1) // border and padding
	title, lines := d.content(r, c, inner)
	body := h - 2
	out := make([]string, 0, body)
	out = append(out, d.styles.PaneTitle.Render(ansi.Truncate(format.Printable(title), inner, "…")))
	for _, l := range lines {
		if len(out) == body {
			break
		}
		out = append(out, l)
	}
	if len(lines)+1 > body && body > 1 {
		out[body-1] = d.styles.DetailKey.Render("…")
	}
	return d.styles.Pane.Width(w - 2).Height(body).MaxHeight(h).Render(strings.Join(out, "\n"))
}

// kv formats one "key  value" line, wrapping the value under itself.
func (d detail) kv(k, v string, inner int) []string {
	v = format.Printable(v)
	vw := max(inner-detailKeyW, 8)
	wrapped := wrapValue(v, vw)
	out := make([]string, 0, len(wrapped))
	for i, part := range wrapped {
		key := ""
		if i == 0 {
			key = k
		}
		out = append(out, d.styles.DetailKey.Render(fmt.Sprintf("%-*s", detailKeyW, key))+d.styles.DetailValue.Render(part))
	}
	return out
}

// wrapValue wraps v to lines of at most w cells: at spaces and slashes,
// after a hyphen inside a word, and anywhere in a word longer than a line.
// Not after the hyphens a word starts with: ansi.Wordwrap breaks at every
// hyphen, and a command line's "-address" read "-" at the end of one line
// and "address" at the start of the next. Those hyphens are swapped for a
// non-breaking hyphen (U+2011, one cell) while wrapping, unless v holds
// one already.
func wrapValue(v string, w int) []string {
	const nbHyphen = "\u2011"
	protect := !strings.Contains(v, nbHyphen)
	if protect {
		var b strings.Builder
		leading := true // at the start of a word, or in its leading hyphens
		for _, r := range v {
			switch {
			case r == ' ':
				leading = true
			case r == '-' && leading:
				b.WriteString(nbHyphen)
				continue
			default:
				leading = false
			}
			b.WriteRune(r)
		}
		v = b.String()
	}
	out := ansi.Hardwrap(ansi.Wordwrap(v, w, " /"), w, true)
	if protect {
		out = strings.ReplaceAll(out, nbHyphen, "-")
	}
	return strings.Split(out, "\n")
}

func (d detail) sandbox(sb *model.Sandbox, c *rowCtx, inner int) (string, []string) {
	snap := c.view.Snapshot
	var l []string
	add := func(k, v string) { l = append(l, d.kv(k, v, inner)...) }

	rule := "none: kept by sticky attribution (its matched processes are gone)"
	if sb.Rule != nil {
		rule = fmt.Sprintf("%s (%s), ID captured by its %s matcher", sb.Rule.Name, sb.Rule.Source, sb.MatchedBy)
	}
	add("runtime", sb.Runtime)
	if sb.Namespace != "" {
		add("namespace", sb.Namespace)
	}
	add("rule", rule)
	if sb.Root == nil {
		d.leftovers(sb, c, add)
		return "sandbox " + sb.ID, l
	}
	root := sb.Root.Process
	rootText := fmt.Sprintf("pid %d %s, started %s (%s ago)", root.PID, format.Command(root.Argv, root.Comm),
		snap.StartTime(root).Format(timeLayout), format.Age(c.view.Time.Sub(snap.StartTime(root))))
	if sb.CgroupOnly {
		rootText = "gone (no " + sb.Runtime + " shim or monitor left); oldest process left: " + rootText
	}
	add("root", rootText)
	procs := strconv.Itoa(len(sb.Members))
	if sb.Zombies > 0 {
		procs += fmt.Sprintf(" (%d zombies)", sb.Zombies)
	}
	add("processes", procs)
	// What a teardown of it would do, worded as the confirmation and the
	// CLI word it: planning is pure, and the plan is thrown away.
	plan, planErr := teardown.PlanSandbox(c.view, sb, teardown.PlanOptions{Grace: c.grace})
	var f teardown.Facts
	if planErr == nil {
		f = plan.Facts()
		add("cgroup", f.Cgroup)
	} else {
		add("cgroup", cmp.Or(sb.Cgroup, "none dedicated"))
	}
	add("state", sandboxState(sb))
	sup := supervisorText(sb.SupervisorNote)
	switch {
	case sb.Orphan:
		sup += ": orphan"
	case sb.Supervised:
		sup += ": supervised"
	}
	add("supervisor", sup)
	if planErr != nil {
		add("teardown", "refused: "+planErr.Error())
	} else {
		add("cleanup", f.Cleanup)
		add("teardown", f.Strategy+": "+f.StepsText())
	}
	if len(sb.Vars) > 0 {
		keys := make([]string, 0, len(sb.Vars))
		for k := range sb.Vars {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			keys[i] = k + "=" + sb.Vars[k]
		}
		add("captures", strings.Join(keys, " "))
	}
	return "sandbox " + sb.Name(), l
}

// leftovers describes a sandbox with no process left: each thing it left
// behind, why it is the sandbox's, and whether a kill removes it.
func (d detail) leftovers(sb *model.Sandbox, c *rowCtx, add func(k, v string)) {
	add("processes", "none left")
	add("supervisor", supervisorText(sb.SupervisorNote))
	for _, lo := range sb.Leftovers {
		what := "a kill removes it"
		if !lo.Removable() {
			what = "kept: " + lo.Keep
		}
		add("leftover", fmt.Sprintf("%s %s, unchanged for %s; %s; %s", lo.Kind, lo.Path, format.Age(lo.Age(c.view.Time)), lo.Why, what))
	}
}

// supervisorText is a supervisor note shown under the "supervisor" key:
// "supervisor gone: …" reads "gone: …" there.
func supervisorText(note string) string {
	return strings.TrimPrefix(note, "supervisor ")
}

func sandboxState(sb *model.Sandbox) string {
	switch {
	case sb.Dead:
		return "dead: every process is a zombie waiting to be reaped"
	case sb.Paused:
		return "paused, " + sb.PausedNote
	}
	return "running"
}

func (d detail) process(r *row, c *rowCtx, inner int) (string, []string) {
	p := r.p
	snap := c.view.Snapshot
	var l []string
	add := func(k, v string) { l = append(l, d.kv(k, v, inner)...) }

	if r.m != nil {
		in := fmt.Sprintf("%s (%s), joined by %s", r.sb.Name(), r.sb.Runtime, r.m.Via)
		if r.m.Orphan {
			in += "; re-parented away from its tree (orphan)"
		}
		add("sandbox", in)
	} else {
		add("sandbox", "none: a host process")
	}
	add("argv", argvText(p))
	if p.Exe != "" {
		add("exe", p.Exe)
	}
	if p.Cwd != "" {
		add("cwd", p.Cwd)
	}
	add("state", fmt.Sprintf("%c (%s), %d threads, uid %s", p.State, format.State(p.State), p.Threads, uidText(c.users, p.UID)))
	add("ids", fmt.Sprintf("ppid %d, pgid %d, sid %d", p.PPID, p.PGID, p.SID))
	add("nspid", nspid(p))
	start := snap.StartTime(p)
	add("started", fmt.Sprintf("%s (%s ago), identity %s", start.Format(timeLayout), format.Age(c.view.Time.Sub(start)), p.ID()))
	cpu := format.CPUTime(snap.CPUSeconds(p))
	if c.cpu.known() {
		cpu += fmt.Sprintf(", %.1f%% now", c.cpu.of(p))
	}
	add("cpu", cpu)
	add("memory", format.Bytes(p.RSS)+" resident")
	add("cgroup", cgroupText(p.Cgroup, snap.Cgroups))
	if p.Freezer != "" {
		add("freezer", cgroupText(p.Freezer, snap.Freezers))
	}
	if p.Partial {
		add("note", format.PartialNote())
	}
	return fmt.Sprintf("process %d %s", p.PID, p.Comm), l
}

func argvText(p *proc.Process) string {
	if len(p.Argv) == 0 {
		if p.Zombie() {
			return "(none: a zombie has no command line)"
		}
		return "(none)"
	}
	return strings.Join(p.Argv, " ")
}

func uidText(users map[int]string, uid int) string {
	if uid < 0 {
		return "unreadable"
	}
	if n, ok := users[uid]; ok && n != strconv.Itoa(uid) {
		return fmt.Sprintf("%d (%s)", uid, n)
	}
	return strconv.Itoa(uid)
}

func nspid(p *proc.Process) string {
	if len(p.NSpid) <= 1 {
		return "no nested pid namespace"
	}
	s := make([]string, len(p.NSpid))
	for i, n := range p.NSpid {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " → ") + " (outermost first)"
}

func cgroupText(path string, states map[string]proc.CgroupState) string {
	if path == "" {
		return "none"
	}
	if states[path].Frozen {
		return path + " (frozen)"
	}
	return path
}
