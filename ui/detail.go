package ui

import (
	"cmp"
	"fmt"
	"path"
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
// grouped, badged or left alone before touching it. Its title (the whole
// ID, wrapped) stays; the lines under it scroll while it has the focus.
type detail struct {
	styles *Styles
	// focused: the moving keys scroll the pane, not the list.
	focused bool
	// offset is how far the lines are scrolled, for the row key.
	offset int
	key    rowKey
}

// content is the pane's title and lines for a row, wrapped to inner cells.
func (d detail) content(r *row, c *rowCtx, inner int) (string, []string) {
	switch {
	case r == nil || c.view == nil:
		return "details", []string{"nothing selected"}
	case r.kind == rowSandbox:
		return d.sandbox(r.sb, c, inner)
	case r.kind == rowHost:
		return "host", d.host(r, c, inner)
	}
	return d.process(r, c, inner)
}

// lines are the pane's title lines and its scrolling lines for a row.
func (d detail) lines(r *row, c *rowCtx, w int) ([]string, []string) {
	inner := max(w-4, 1) // border and padding
	title, lines := d.content(r, c, inner)
	return strings.Split(ansi.Hardwrap(format.Printable(title), inner, true), "\n"), lines
}

// height is how many rows the pane needs for a row, border included.
func (d detail) height(r *row, c *rowCtx, w int) int {
	title, lines := d.lines(r, c, w)
	return len(title) + len(lines) + 2
}

// follow starts the pane at its top when the selection moves to another
// row.
func (d *detail) follow(r *row) {
	k := rowKey{}
	if r != nil {
		k = r.key
	}
	if k != d.key {
		d.key, d.offset = k, 0
	}
}

// scroll moves the lines by n (clamped) in a pane of h rows.
func (d *detail) scroll(r *row, c *rowCtx, w, h, n int) {
	title, lines := d.lines(r, c, w)
	d.offset = max(min(d.offset+n, len(lines)-(h-2-len(title))), 0)
}

// view draws the pane in exactly w×h cells, border included.
func (d detail) view(r *row, c *rowCtx, w, h int) string {
	title, lines := d.lines(r, c, w)
	body := h - 2
	room := max(body-len(title), 1)
	off := max(min(d.offset, len(lines)-room), 0)
	win := slices.Clone(lines[off:min(off+room, len(lines))])
	if off > 0 && len(win) > 1 {
		win[0] = d.styles.DetailKey.Render(fmt.Sprintf("↑ %d more", off))
	}
	if below := len(lines) - off - len(win); below > 0 && len(win) > 1 {
		hint := ""
		if !d.focused {
			hint = " (tab, then ↓)"
		}
		win[len(win)-1] = d.styles.DetailKey.Render(fmt.Sprintf("↓ %d more%s", below+1, hint))
	}
	out := make([]string, 0, body)
	for _, t := range title {
		out = append(out, d.styles.PaneTitle.Render(t))
	}
	out = append(out, win...)
	style := d.styles.Pane
	if d.focused {
		style = d.styles.PaneFocused
	}
	return style.Width(w - 2).Height(body).MaxHeight(h).Render(strings.Join(out[:min(len(out), body)], "\n"))
}

// kv formats one "key  value" line, wrapping the value under itself.
func (d detail) kv(k, v string, inner int) []string {
	return d.kvWrapped(k, v, inner, wrapValue)
}

// kvArgv is kv for a command line: it wraps at spaces only.
func (d detail) kvArgv(k, v string, inner int) []string {
	return d.kvWrapped(k, v, inner, wrapArgv)
}

func (d detail) kvWrapped(k, v string, inner int, wrap func(string, int) []string) []string {
	v = format.Printable(v)
	vw := max(inner-detailKeyW, 8)
	wrapped := wrap(v, vw)
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

// wrapArgv wraps a command line to lines of at most w cells at its spaces
// only: a flag (--unshare-ipc) or a hyphenated name stays whole on a
// line, and only a word longer than a line is cut.
func wrapArgv(v string, w int) []string {
	const nbHyphen = "\u2011"
	if strings.Contains(v, nbHyphen) {
		return wrapValue(v, w)
	}
	out := ansi.Hardwrap(ansi.Wordwrap(strings.ReplaceAll(v, "-", nbHyphen), w, ""), w, true)
	return strings.Split(strings.ReplaceAll(out, nbHyphen, "-"), "\n")
}

// host describes the host group: how many processes are in no sandbox,
// and which of them could be read only in part, with the fields that are
// missing and why (as root that is the kernel's doing, often PID 1's exe
// and cwd).
func (d detail) host(r *row, c *rowCtx, inner int) []string {
	var l []string
	add := func(k, v string) { l = append(l, d.kv(k, v, inner)...) }
	add("processes", fmt.Sprintf("%s in no sandbox on %s", format.Count(r.st.procs, "process", "processes"), format.Printable(c.view.Host)))
	for _, p := range c.view.Unattributed {
		if !p.Partial {
			continue
		}
		var missing []string
		if p.Exe == "" {
			missing = append(missing, "exe")
		}
		if p.Cwd == "" {
			missing = append(missing, "cwd")
		}
		if p.UID < 0 {
			missing = append(missing, "uid")
		}
		what := "some fields"
		if len(missing) > 0 {
			what = strings.Join(missing, ", ")
		}
		add("unreadable", fmt.Sprintf("pid %d %s: %s not read; %s", p.PID, p.Comm, what, format.PartialNote()))
	}
	add("keys", "expand the group to see them; K on one tears down its subtree")
	return l
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
	rootText := fmt.Sprintf("pid %d %s, started %s (%s ago)", root.PID, format.Command(root),
		snap.StartTime(root).Format(timeLayout), format.Age(c.view.Time.Sub(snap.StartTime(root))))
	if sb.CgroupOnly {
		rootText = "gone (no " + sb.Runtime + " shim or monitor left); oldest process left: " + rootText
	}
	l = append(l, d.kvArgv("root", rootText, inner)...)
	procs := strconv.Itoa(len(sb.Members))
	if sb.Zombies > 0 {
		procs += " (" + format.Count(sb.Zombies, "zombie", "zombies") + ")"
	}
	add("processes", procs)
	if sb.Escaped > 0 {
		// Its own line, never the orphan badge: the supervisor may be
		// alive and well.
		add("escaped", format.Count(sb.Escaped, "process", "processes")+" left the tree (double-forked, re-parented): the sandbox's still, by its cgroup; a teardown takes them too")
	}
	for i, c := range sb.Containers() {
		key := ""
		if i == 0 {
			key = "containers"
		}
		add(key, fmt.Sprintf("%s %s in %s", c.ID, format.Count(len(c.Members), "process", "processes"), path.Base(c.Cgroup)))
	}
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
	d.resources(sb, c, add)
	d.network(sb, c, add)
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
		for _, sus := range f.Suspects {
			add("suspect", sus)
		}
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
	add("leftovers", model.LeftoverSummary(sb.Leftovers))
	// Grouped by kind, in the order a kill takes them (the model sorts
	// them so): each under its kind's name.
	for _, lo := range sb.Leftovers {
		what := "a kill removes it"
		if !lo.Removable() {
			what = "kept: " + lo.Keep
		}
		where := lo.Path
		switch {
		case lo.Netns != "":
			where += " in netns " + lo.Netns
		case lo.NSPID != 0:
			where += " in the mount namespace of pid " + strconv.Itoa(lo.NSPID)
		case lo.Hierarchy != "":
			where += " (" + lo.Hierarchy + ")"
		}
		age := "no age known"
		if !lo.ModTime.IsZero() {
			age = "unchanged for " + format.Age(lo.Age(c.view.Time))
		}
		add(string(lo.Kind), fmt.Sprintf("%s, %s; %s; %s", where, age, lo.Why, what))
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
		if r.m.Escaped {
			in += "; escaped its tree (re-parented to pid " + strconv.Itoa(p.PPID) + "), still the sandbox's"
		}
		add("sandbox", in)
	} else {
		add("sandbox", "none: a host process")
	}
	l = append(l, d.kvArgv("argv", argvText(p), inner)...)
	if p.Exe != "" {
		add("exe", p.Exe)
	}
	if p.Cwd != "" {
		add("cwd", p.Cwd)
	}
	add("state", fmt.Sprintf("%c (%s), %s, uid %s", p.State, format.State(p.State), format.Count(p.Threads, "thread", "threads"), uidText(c.users, p.UID)))
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
	return strings.Join(p.Argv, " ") + format.ArgvCutMark(p)
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
