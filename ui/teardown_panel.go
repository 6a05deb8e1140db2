package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/teardown"
	"github.com/sandtop/sandtop/ui/format"
)

// teardownPanel streams the engine's events, one line per step, as they
// happen; it stays until dismissed and scrolls (bubbles viewport). It is a
// log of every teardown since it was last closed.
type teardownPanel struct {
	styles  *Styles
	vp      viewport.Model
	spin    spinner.Model
	lines   []string
	open    bool
	focused bool
	// running counts batches still in flight; the panel cannot be closed
	// while one is, so nobody misses how a teardown ended.
	running int
	failed  int
	width   int
	// batch sums up the teardowns since the log was opened, for the line
	// that ends it and the status line after it is closed.
	batch batchSum
	// watched are the sandboxes torn down since the log was opened that
	// have not come back (see comeback); cameBack counts those that did.
	watched  []*comeback
	cameBack int
}

// batchSum is what a log's teardowns came to.
type batchSum struct {
	targets, killed, gone, survivors, failed int
	took                                     time.Duration
}

func (b batchSum) String() string {
	s := fmt.Sprintf("%s: %d killed, %d already gone, %s, %s",
		format.Count(b.targets, "target", "targets"), b.killed, b.gone, format.Count(b.survivors, "survivor", "survivors"), b.took.Round(time.Millisecond))
	if b.failed > 0 {
		s += ", " + format.Count(b.failed, "failed step", "failed steps")
	}
	return s
}

func newTeardownPanel(s *Styles) teardownPanel {
	return teardownPanel{
		styles: s,
		vp:     viewport.New(0, 0),
		spin:   spinner.New(spinner.WithSpinner(spinner.Dot), spinner.WithStyle(s.Title)),
	}
}

// begin opens the panel on a new batch and starts the spinner when it is
// the first one running.
func (p *teardownPanel) begin(plans []*teardown.Plan) tea.Cmd {
	p.open, p.focused = true, true
	for _, pl := range plans {
		p.add(p.styles.Title.Render("▶ "+format.Printable(pl.Target)) +
			fmt.Sprintf("  %s, %s, %s", format.Printable(pl.Runtime), format.Count(len(pl.Members), "process", "processes"), pl.Strategy()))
	}
	p.running++
	if p.running == 1 {
		return p.spin.Tick
	}
	return nil
}

func (p *teardownPanel) event(ev teardown.Event) {
	if ev.Status == teardown.Fail {
		p.failed++
	}
	p.add(p.logLine(ev.Status, ev.Sandbox, format.Printable(ev.Text())))
}

// logLine is one line of the log: the status tag, the target cut short,
// and text, which the caller has made printable (and styled).
func (p *teardownPanel) logLine(st teardown.Status, target, text string) string {
	padW := 7 - len(st) - 2
	return p.styles.Step(st) + strings.Repeat(" ", max(padW, 1)) + format.Printable(short(target)) + "  " + text
}

func (p *teardownPanel) planDone(m teardownPlanDoneMsg) {
	t := m.totals
	p.batch.targets++
	p.batch.killed += t.Killed
	p.batch.gone += t.AlreadyGone
	p.batch.survivors += len(t.Survivors)
	p.batch.failed += t.Failed
	p.batch.took += t.Elapsed
	if m.comeback != nil {
		p.watched = append(p.watched, m.comeback)
	}
	switch {
	case m.audit == "":
		p.add(p.styles.Warning.Render("  audit: no audit log configured"))
	case m.auditErr != nil:
		p.add(p.styles.Error.Render("  audit: FAILED: " + format.Printable(m.auditErr.Error())))
	default:
		p.add(p.styles.Status.Render("  audit: appended to " + format.Printable(m.audit)))
	}
}

func (p *teardownPanel) batchDone() {
	p.running = max(p.running-1, 0)
	if p.running == 0 {
		st := p.styles.Status
		if p.batch.survivors > 0 || p.batch.failed > 0 {
			st = p.styles.Error
		}
		p.add(st.Render("finished: "+p.batch.String()) + p.styles.Status.Render("  (esc closes this log)"))
	}
}

// tick keeps the spinner going while something runs.
func (p *teardownPanel) tick(msg spinner.TickMsg) tea.Cmd {
	if p.running == 0 {
		return nil
	}
	var cmd tea.Cmd
	p.spin, cmd = p.spin.Update(msg)
	return cmd
}

func (p *teardownPanel) add(line string) {
	follow := p.vp.AtBottom()
	p.lines = append(p.lines, line)
	p.vp.SetContent(p.content())
	p.vp.SetContent(p.content())
	if follow {
		p.vp.GotoBottom()
	}
}

// content is the log wrapped to the pane, so that no line (a verify
// naming its survivors) is cut off.
func (p *teardownPanel) content() string {
	if p.vp.Width <= 1 {
		return strings.Join(p.lines, "\n")
	}
	wrapped := make([]string, len(p.lines))
	for i, l := range p.lines {
		wrapped[i] = ansi.Wrap(l, p.vp.Width, " ")
	}
	return strings.Join(wrapped, "\n")
}

// close hides the panel and forgets its log; false while a teardown runs.
func (p *teardownPanel) close() bool {
	if p.running > 0 {
		return false
	}
	p.open, p.focused, p.lines, p.failed, p.batch = false, false, nil, 0, batchSum{}
	p.watched, p.cameBack = nil, 0
	p.vp.SetContent("")
	return true
}

// setSize gives the panel w×h cells, border included. The log keeps its
// place: only a log that was following its end goes on following it (the
// screen is laid out after every message; jumping to the end each time
// made the start of a long log unreachable).
func (p *teardownPanel) setSize(w, h int) {
	follow := p.vp.AtBottom()
	p.width = w
	p.vp.Width = max(w-4, 1)
	p.vp.Height = max(h-3, 1) // border and title
	if follow {
		p.vp.GotoBottom()
	}
}

func (p *teardownPanel) scroll(k KeyMap, msg tea.KeyMsg) {
	switch {
	case key.Matches(msg, k.Up):
		p.vp.ScrollUp(1)
	case key.Matches(msg, k.Down):
		p.vp.ScrollDown(1)
	case key.Matches(msg, k.PageUp):
		p.vp.PageUp()
	case key.Matches(msg, k.PageDown):
		p.vp.PageDown()
	case key.Matches(msg, k.Top):
		p.vp.GotoTop()
	case key.Matches(msg, k.Bottom):
		p.vp.GotoBottom()
	}
}

func (p *teardownPanel) view() string {
	title := "teardown"
	switch {
	case p.running > 0:
		title = p.spin.View() + " teardown running"
	case p.failed > 0:
		title = "teardown finished, " + format.Count(p.failed, "failed step", "failed steps")
	default:
		title = "teardown finished"
	}
	if p.cameBack > 0 {
		title += fmt.Sprintf(", %d came back", p.cameBack)
	}
	if !p.focused {
		title += p.styles.Status.Render("  (tab: focus)")
	}
	style := p.styles.Pane
	if p.focused {
		style = p.styles.PaneFocused
	}
	body := ansi.Truncate(p.styles.PaneTitle.Render(title), p.vp.Width, "…") + "\n" + p.vp.View()
	return style.Width(p.width - 2).Render(body)
}

// logIDW is how much of a sandbox ID each log line repeats: enough to
// tell the targets of one batch apart, short enough to leave room.
const logIDW = 16

// short cuts a sandbox ID for the log; "pid N" targets stay whole.
func short(target string) string {
	if strings.HasPrefix(target, "pid ") || len(target) <= logIDW {
		return target
	}
	return target[:logIDW]
}
