package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/teardown"
	"github.com/sandtop/sandtop/ui/format"
)

// A kill that would hit more than one target or more than typedProcs
// processes must be confirmed by typing, not by one key.
const (
	typedProcs  = 50
	typedPrefix = 4 // characters of the ID to type
)

type confirmFocus uint8

const (
	focusCancel confirmFocus = iota
	focusConfirm
	focusInput
)

type confirmResult uint8

const (
	confirmOpen confirmResult = iota
	confirmCancelled
	confirmAccepted
)

// confirm is the kill confirmation. It shows the plans the engine made,
// from the view they were made from, and starts with the focus on Cancel
// so that a reflexive enter never kills anything.
type confirm struct {
	styles *Styles
	keys   confirmKeys
	plans  []*teardown.Plan
	errs   []string
	// grace is the graceful strategy's wait; immediate means SIGKILL now.
	grace     time.Duration
	immediate bool
	typed     bool
	want      string // what to type; a longer prefix of the ID also counts
	input     textinput.Model
	focus     confirmFocus
	hint      string
	// offset scrolls the list of targets; room and total are its window
	// and its length as last drawn.
	offset, room, total int
	// foreign counts the planned processes of other users when sandtop
	// is not root: their signals will fail with EPERM.
	foreign int
	// withCgroup includes the plans' suspects (see teardown.Suspect).
	withCgroup bool
}

// suspects reports whether a plan names a suspect the operator may include.
func (c *confirm) suspects() bool {
	for _, p := range c.plans {
		for _, s := range p.Suspects {
			if !s.Provable {
				return true
			}
		}
	}
	return false
}

func newConfirm(s *Styles, msg plansMsg, grace time.Duration, euid int) *confirm {
	c := &confirm{styles: s, plans: msg.plans, errs: msg.errs, grace: grace}
	if euid != 0 && msg.view != nil {
		for _, p := range c.plans {
			for _, mb := range p.Members {
				if pr := msg.view.Snapshot.Proc(mb.PID); pr != nil && pr.Start == mb.Start && pr.UID != euid {
					c.foreign++
				}
			}
		}
	}
	if c.grace <= 0 {
		c.grace, c.immediate = teardown.DefaultGrace, true
	}
	procs := c.processes()
	if len(c.plans) > 1 || procs > typedProcs {
		c.typed = true
		switch {
		case len(c.plans) > 1:
			c.want = "yes"
		case c.plans[0].Sandbox != nil:
			id := c.plans[0].Target
			c.want = id[:min(len(id), typedPrefix)]
		default:
			c.want = strconv.Itoa(c.plans[0].RootPID)
		}
		c.input = textinput.New()
		c.input.Prompt = "> "
		c.input.CharLimit = 128
		c.input.Width = 24
		// Steady, as the filter line's (see New).
		c.input.Cursor.SetMode(cursor.CursorStatic)
	}
	c.keys = newConfirmKeys(c.typed)
	c.keys.WithCgroup.SetEnabled(c.suspects())
	c.apply()
	return c
}

func (c *confirm) processes() int {
	n := 0
	for _, p := range c.plans {
		n += len(p.Members)
	}
	return n
}

// apply sets the chosen strategy on every plan (the plans are ours: made
// for this confirmation alone).
func (c *confirm) apply() {
	for _, p := range c.plans {
		p.Grace = c.grace
		if c.immediate {
			p.Grace = 0
		}
	}
}

// matches reports whether the typed text confirms.
func (c *confirm) matches() bool {
	v := strings.TrimSpace(c.input.Value())
	if c.want == "yes" || c.plans[0].Sandbox == nil {
		return strings.EqualFold(v, c.want)
	}
	return len(v) >= len(c.want) && strings.HasPrefix(c.plans[0].Target, v)
}

func (c *confirm) update(msg tea.KeyMsg) (confirmResult, tea.Cmd) {
	c.hint = ""
	switch {
	case key.Matches(msg, c.keys.No):
		return confirmCancelled, nil
	case key.Matches(msg, c.keys.Yes):
		return confirmAccepted, nil
	case key.Matches(msg, c.keys.Strategy):
		c.immediate = !c.immediate
		c.apply()
		return confirmOpen, nil
	case key.Matches(msg, c.keys.WithCgroup):
		c.withCgroup = !c.withCgroup
		for _, p := range c.plans {
			p.SetWithCgroup(c.withCgroup)
		}
		return confirmOpen, nil
	case key.Matches(msg, c.keys.Focus):
		c.cycle(msg.String() == "shift+tab" || msg.String() == "left")
		return confirmOpen, nil
	case key.Matches(msg, c.keys.Press):
		return c.press(), nil
	case key.Matches(msg, c.keys.Up):
		c.scroll(-1)
		return confirmOpen, nil
	case key.Matches(msg, c.keys.Down):
		c.scroll(1)
		return confirmOpen, nil
	case key.Matches(msg, c.keys.PageUp):
		c.scroll(-max(c.room-1, 1))
		return confirmOpen, nil
	case key.Matches(msg, c.keys.PageDown):
		c.scroll(max(c.room-1, 1))
		return confirmOpen, nil
	}
	if !c.typed {
		return confirmOpen, nil
	}
	// Anything else is typing: it moves the focus into the text field.
	c.setFocus(focusInput)
	var cmd tea.Cmd
	c.input, cmd = c.input.Update(msg)
	return confirmOpen, cmd
}

func (c *confirm) press() confirmResult {
	switch c.focus {
	case focusCancel:
		return confirmCancelled
	case focusConfirm, focusInput:
		if !c.typed || c.matches() {
			return confirmAccepted
		}
		c.hint = fmt.Sprintf("type %q first", c.want)
		c.setFocus(focusInput)
	}
	return confirmOpen
}

func (c *confirm) cycle(back bool) {
	order := []confirmFocus{focusCancel, focusConfirm}
	if c.typed {
		order = []confirmFocus{focusInput, focusCancel, focusConfirm}
	}
	i := 0
	for j, f := range order {
		if f == c.focus {
			i = j
		}
	}
	if back {
		i += len(order) - 1
	} else {
		i++
	}
	c.setFocus(order[i%len(order)])
}

func (c *confirm) setFocus(f confirmFocus) {
	c.focus = f
	if !c.typed {
		return
	}
	if f == focusInput {
		c.input.Focus()
	} else {
		c.input.Blur()
	}
}

// view draws the dialog centered in w×h.
func (c *confirm) view(w, h int) string {
	s := c.styles
	inner := max(min(w-6, 140), 20) // double border and padding
	var l []string
	what := format.Count(len(c.plans), "target", "targets")
	if len(c.plans) == 1 {
		what = c.plans[0].Facts().Title
	}
	l = append(l, s.ModalTitle.Render(format.Printable(fmt.Sprintf("Tear down %s (%s)?", what, format.Count(c.processes(), "process", "processes")))), "")

	if c.foreign > 0 {
		l = append(l, s.Warning.Render(fmt.Sprintf("not root: processes of other users cannot be signalled (%s here)",
			format.Count(c.foreign, "process", "processes"))), "")
	}
	// What follows the targets: errors, the strategy, the typed prompt,
	// the buttons.
	var tail []string
	for _, e := range c.errs {
		tail = append(tail, s.Error.Render("not planned: ")+format.Printable(e))
	}
	tail = append(tail, "")
	other := "immediate SIGKILL"
	if c.immediate {
		other = "graceful"
	}
	first := c.plans[0].Facts()
	tail = append(tail, wrapLines(s.DetailKey.Render(fmt.Sprintf("%-*s", detailKeyW, "strategy"))+s.Danger.Render(first.Strategy)+
		s.DetailKey.Render(fmt.Sprintf("  (%s: %s)", c.keys.Strategy.Help().Key, other)), inner)...)
	if len(c.plans) == 1 {
		tail = append(tail, wrapLines(s.DetailKey.Render(fmt.Sprintf("%-*s", detailKeyW, "steps"))+first.StepsText(), inner)...)
	}
	if c.suspects() {
		what, other := "not signalled", "include them"
		if c.withCgroup {
			what, other = "included, each pinned and verified", "leave them"
		}
		tail = append(tail, wrapLines(s.DetailKey.Render(fmt.Sprintf("%-*s", detailKeyW, "suspects"))+s.Danger.Render(what)+
			s.DetailKey.Render(fmt.Sprintf("  (%s: %s)", c.keys.WithCgroup.Help().Key, other)), inner)...)
	}
	tail = append(tail, "")
	if c.typed {
		tail = append(tail, fmt.Sprintf("Type %s to confirm:", s.Danger.Render(strconv.Quote(c.want))), c.input.View())
	}
	if c.hint != "" {
		tail = append(tail, s.Error.Render(c.hint))
	}
	cancel, ok := s.Button.Render("Cancel"), s.Button.Render("Tear down")
	switch c.focus {
	case focusCancel:
		cancel = s.ButtonFocused.Render("Cancel")
	case focusConfirm:
		ok = s.ButtonFocused.Render("Tear down")
	}
	if s.Plain {
		cancel, ok = button("Cancel", c.focus == focusCancel), button("Tear down", c.focus == focusConfirm)
	}
	tail = append(tail, cancel+"   "+ok)

	// Every target is listed, each with its facts and processes, in the
	// room the rest leaves; the list scrolls (↑ ↓ PgUp PgDn) when the
	// window is too short for it.
	room := max(h-2-len(l)-len(tail), 3)
	targets := c.targetLines(inner, room)
	c.room, c.total = room, len(targets)
	c.offset = max(min(c.offset, len(targets)-room), 0)
	win := targets
	if len(targets) > room {
		win = slices.Clone(targets[c.offset : c.offset+room])
		if c.offset > 0 {
			win[0] = s.DetailKey.Render(fmt.Sprintf("↑ %s (↑ PgUp)", format.Count(c.offset, "more line", "more lines")))
		}
		if below := len(targets) - c.offset - room; below > 0 {
			win[room-1] = s.DetailKey.Render(fmt.Sprintf("↓ %s (↓ PgDn)", format.Count(below+1, "more line", "more lines")))
		}
	}
	l = append(append(l, win...), tail...)
	for i := range l {
		l[i] = ansi.Truncate(l[i], inner, "…")
	}
	box := s.Modal.Width(inner + 4).Render(strings.Join(l, "\n"))
	return lipgloss.Place(w, h, lipgloss.Center, lipgloss.Center, box)
}

// wrapLines wraps a line to w cells at its spaces.
func wrapLines(line string, w int) []string {
	return strings.Split(ansi.Wrap(line, w, ""), "\n")
}

// button marks the focused button without color: "[> Cancel <]".
func button(label string, focused bool) string {
	if focused {
		return "[> " + label + " <]"
	}
	return "[  " + label + "  ]"
}

// targetLines are the lines of every target, one block after another: a
// single target shares room with nothing, so its processes fill it; each
// of several lists at most a few, the rest counted.
func (c *confirm) targetLines(inner, room int) []string {
	var l []string
	for _, p := range c.plans {
		pl := c.planLines(p, inner)
		n := room - len(pl)
		if len(c.plans) > 1 {
			n = maxListedProcs
		}
		l = append(l, pl...)
		l = append(l, c.processLines(p, inner, n)...)
	}
	return l
}

// maxListedProcs is how many processes each of several targets lists.
const maxListedProcs = 4

// scroll moves the list of targets by n lines.
func (c *confirm) scroll(n int) {
	c.offset = max(min(c.offset+n, c.total-c.room), 0)
}

// processLines lists a plan's processes, root first, in at most n lines:
// when they do not all fit, the last line says how many more there are.
func (c *confirm) processLines(p *teardown.Plan, inner, n int) []string {
	if n <= 0 || len(p.Members) == 0 {
		return nil
	}
	s := c.styles
	var l []string
	indent := "  " + strings.Repeat(" ", detailKeyW)
	for i := len(p.Members) - 1; i >= 0; i-- {
		if len(l) == n-1 && i > 0 {
			l = append(l, s.DetailKey.Render(fmt.Sprintf("%s… and %d more", indent, i+1)))
			break
		}
		mb := p.Members[i]
		lead := indent
		if len(l) == 0 {
			lead = "  " + fmt.Sprintf("%-*s", detailKeyW, "processes")
		}
		line := fmt.Sprintf("%s%s%d %s", lead, strings.Repeat("  ", mb.Depth), mb.PID, format.Printable(mb.Comm))
		if mb.Zombie {
			line += " (zombie)"
		}
		l = append(l, s.DetailValue.Render(ansi.Truncate(line, inner, "…")))
	}
	return l
}

// planLines are one plan's facts; the steps of a plan are shown with it
// when the dialog holds several, whose steps may differ.
func (c *confirm) planLines(p *teardown.Plan, inner int) []string {
	s := c.styles
	d := detail{styles: s}
	f := p.Facts()
	var l []string
	kv := func(k, v string) {
		for _, line := range d.kv(k, v, inner-2) {
			l = append(l, "  "+line)
		}
	}
	head := s.Title.Render(format.Printable(p.Target)) + "  " + format.Printable(f.Runtime) +
		fmt.Sprintf("  %s, root %s", f.ProcessesText(), format.Printable(f.Root))
	if p.Sandbox != nil && len(p.Sandbox.Badges) > 0 {
		head += "  " + s.Badges(p.Sandbox.Badges)
	}
	l = append(l, wrapLines(head, inner)...)
	kv("cgroup", f.Cgroup)
	if f.State != "" {
		kv("state", f.State)
	}
	kv("supervisor", f.Supervisor)
	kv("cleanup", f.Cleanup)
	for _, r := range f.Resisters {
		kv("resists", r)
	}
	for _, sus := range f.Suspects {
		kv("suspect", sus)
	}
	if len(c.plans) > 1 {
		kv("steps", f.StepsText())
	}
	return l
}
