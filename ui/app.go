// Package ui is sandtop's live screen: a bubbletea program that shows the
// sandboxes of a host as an expandable tree and tears them down through a
// Killer. It renders model.Views and teardown events; every scan and every
// teardown runs in a tea.Cmd, never in Update.
package ui

import (
	"cmp"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/ui/format"
)

// The smallest terminal the screen is drawn on; below it the screen says
// so instead of drawing a broken table.
const (
	minWidth  = fixedW + minIDW + minRestW + 1
	minHeight = 12
)

// DefaultInterval is the refresh interval when Options.Interval is 0.
const DefaultInterval = time.Second

// Options configure the TUI.
type Options struct {
	Source Source
	// Killer tears down; nil makes the TUI read-only.
	Killer Killer
	// ReadOnly drops Killer even when one is given.
	ReadOnly bool
	// Interval between refreshes (DefaultInterval when 0).
	Interval time.Duration
	// Grace is the graceful strategy's wait after SIGTERM; 0 starts every
	// confirmation on immediate SIGKILL.
	Grace time.Duration
	// ShowHost starts with the host group (processes in no sandbox) shown.
	ShowHost bool
	// LookupUser names a uid (LookupUser when nil); called from a Cmd.
	LookupUser func(uid int) string
	// EUID is the effective uid to judge whose processes can be signalled
	// (os.Geteuid() when nil; tests set it, so that what the screen shows
	// does not depend on who runs them).
	EUID *int
	// Styles (DefaultStyles when nil).
	Styles *Styles
	// Note is a standing note the status line shows whenever it has
	// nothing else to say (the demo's: what runs differently without root).
	Note string
	// Replay shows a recording instead of scanning Source: read-only,
	// with a time bar and the keys to move in time.
	Replay Recording
}

type mode uint8

const (
	modeNormal mode = iota
	modeFilter
	modeSearch
	modeConfirm
	modeJump     // typing a time to jump to, in replay
	modeSortMenu // F6's menu of orders
)

// Model is the root model: it routes messages to the parts of the screen
// and owns the modes (normal, filter, search, confirm) and the refresh loop.
type Model struct {
	src    Source
	killer Killer
	keys   KeyMap
	styles *Styles
	help   help.Model
	grace  time.Duration
	lookup func(int) string
	euid   int // sandtop's effective uid: not root, others' processes refuse signals

	width, height int

	view    *model.View
	pending *viewMsg // the newest scan, held while a confirmation is open
	scanErr error
	sum     summary
	users   map[int]string
	cpu     *cpuSampler
	io      *ioSampler
	names   shortNames

	table      table
	detail     detail
	showDetail bool
	detailH    int
	expanded   map[string]bool
	tags       map[rowKey]bool
	sort       sortKey
	sortPick   sortKey // the order the F6 menu points at
	reverse    bool    // the sort order inverted (htop's I)
	tree       bool
	showHost   bool
	filterQ    string
	lastSearch string // the last search line, for F3 to go on from
	flt        query.Query
	fltErr     error // the filter line does not parse; flt is the last that did
	shown      int   // sandboxes that pass the filter

	mode mode
	// helpOffset is how far the full key help is scrolled.
	helpOffset int
	input      textinput.Model // the filter or search line
	confirm    *confirm
	panel      teardownPanel
	panelH     int

	runs      *runs
	batches   map[int]*batch
	busy      map[proc.Identity]int // members of running teardowns
	nextBatch int

	interval time.Duration
	tickGen  int
	scanning bool
	// tick arms the next refresh (tickCmd; tests that drive Update by hand
	// replace it, having no use for a timer).
	tick func(time.Duration, int) tea.Cmd

	status    string
	statusErr bool
	// lastTeardown sums up the last closed teardown log; it stays on the
	// status line until another one opens.
	// clipboard copies text (OSC 52 to the terminal, from a Cmd; tests
	// replace it).
	clipboard    func(string) tea.Cmd
	lastTeardown string
	lastFailed   bool
	note         string // Options.Note
	quitArmed    bool
	stopRuns     bool // the operator quit asking to stop the running teardowns

	// rec is the recording the source writes, if it does.
	rec *RecordingState

	// bar is the replay's time bar; nil on the live screen.
	bar *timebar
}

// New makes the root model.
func New(o Options) *Model {
	s := o.Styles
	if s == nil {
		s = DefaultStyles()
	}
	m := &Model{
		src:      o.Source,
		killer:   o.Killer,
		keys:     DefaultKeyMap(),
		styles:   s,
		help:     help.New(),
		grace:    o.Grace,
		lookup:   o.LookupUser,
		cpu:      &cpuSampler{},
		io:       &ioSampler{},
		table:    table{styles: s},
		detail:   detail{styles: s},
		expanded: map[string]bool{},
		tags:     map[rowKey]bool{},
		tree:     true,
		showHost: o.ShowHost,
		panel:    newTeardownPanel(s),
		runs:     newRuns(),
		batches:  map[int]*batch{},
		busy:     map[proc.Identity]int{},
		interval: cmp.Or(o.Interval, DefaultInterval),
		tick:     tickCmd,
		euid:     euidOr(o.EUID),
		note:     o.Note,
		clipboard: func(s string) tea.Cmd {
			return func() tea.Msg { termenv.Copy(s); return nil }
		},
	}
	if m.lookup == nil {
		m.lookup = LookupUser
	}
	if o.ReadOnly || o.Replay != nil {
		m.killer = nil
	}
	if o.Replay != nil {
		m.bar = newTimebar(o.Replay)
		m.keys.replayKeys()
	}
	if m.killer == nil {
		m.keys.readOnly()
	}
	m.help.Styles = s.Help
	m.input = textinput.New()
	m.input.CharLimit = 256
	// The cursor blinks only if bubbletea routes its blink messages back;
	// a steady one repaints nothing while the operator reads.
	m.input.Cursor.SetMode(cursor.CursorStatic)
	return m
}

// ReadOnly reports whether the model has no way to tear anything down.
func (m *Model) ReadOnly() bool { return m.killer == nil }

// Shutdown waits until every teardown still running has finished: thawed
// what it froze, verified and written its audit record. When the operator
// quit by asking to stop them (q twice) they send no further signal first;
// when the screen went away any other way (its terminal closed, a signal)
// they finish as confirmed. Call it after the program returns.
//
// It returns an error naming every teardown that the operator stopped, or
// that ended with survivors after the screen was gone: the screen's last
// word must be as true as the CLI's.
func (m *Model) Shutdown() error {
	unseen := m.runs.shutdown(m.stopRuns)
	if len(unseen) == 0 {
		return nil
	}
	return fmt.Errorf("teardown incomplete: %s", strings.Join(unseen, "\n  "))
}

// Init starts the first scan; the refresh tick is armed when it returns.
func (m *Model) Init() tea.Cmd {
	if m.bar != nil {
		if m.bar.n == 0 {
			return nil
		}
		return m.load(0)
	}
	m.scanning = true
	return scanCmd(m.src, m.resourceNeeds(), m.users, m.lookup)
}

// Update routes one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tickMsg:
		if msg.gen == m.tickGen && !m.scanning {
			m.scanning = true
			cmd = scanCmd(m.src, m.resourceNeeds(), m.users, m.lookup)
		}
	case viewMsg:
		cmd = m.scanned(msg)
	case frameMsg:
		cmd = m.framed(msg)
	case playMsg:
		cmd = m.played(msg)
	case foundMsg:
		cmd = m.found(msg)
	case plansMsg:
		m.openConfirm(msg)
	case teardownEventMsg:
		m.panel.event(msg.ev)
		cmd = m.rearm(msg.batch)
	case teardownPlanDoneMsg:
		m.panel.planDone(msg)
		cmd = m.rearm(msg.batch)
	case teardownBatchDoneMsg:
		cmd = m.batchDone(msg.batch)
	case spinner.TickMsg:
		cmd = m.panel.tick(msg)
	case tea.KeyMsg:
		cmd = m.keyPress(msg)
	case tea.MouseMsg:
		m.mouse(msg)
	}
	m.layout()
	return m, cmd
}

// keyPress undoes bubbletea's reading of an esc that arrives together with
// the next key as alt+key (esc esc reads as alt+esc, esc q as alt+q):
// sandtop binds no alt keys, and an operator who hits esc then q means both.
func (m *Model) keyPress(msg tea.KeyMsg) tea.Cmd {
	if msg.Alt && (msg.Type == tea.KeyEsc || msg.Type == tea.KeyRunes) {
		esc := m.key(tea.KeyMsg{Type: tea.KeyEsc})
		msg.Alt = false
		return tea.Batch(esc, m.key(msg))
	}
	return m.key(msg)
}

// scanned takes a finished scan and arms the next tick.
func (m *Model) scanned(msg viewMsg) tea.Cmd {
	m.scanning = false
	m.tickGen++
	next := m.tick(m.interval, m.tickGen)
	switch {
	case msg.err != nil:
		m.scanErr = msg.err
	case m.mode == modeConfirm:
		// The operator is reading a plan made from the current list: it
		// must not change under them.
		m.pending = &msg
	default:
		m.apply(msg)
	}
	return next
}

func (m *Model) apply(msg viewMsg) {
	m.view, m.users, m.scanErr, m.rec = msg.view, msg.users, nil, msg.rec
	m.cpu.update(msg.view.Snapshot)
	m.io.update(msg.view)
	m.sum = summarize(msg.view)
	m.panel.comebacks(msg.view)
	m.pruneTags()
	m.rebuild()
}

// refreshNow starts a scan unless one is running, and replaces the tick
// chain: the next tick is armed when the scan returns.
func (m *Model) refreshNow() tea.Cmd {
	if m.scanning {
		return nil
	}
	m.scanning = true
	m.tickGen++
	return scanCmd(m.src, m.resourceNeeds(), m.users, m.lookup)
}

// rebuild flattens the view into rows again; the cursor follows identity.
func (m *Model) rebuild() {
	keep, had := rowKey{}, false
	if r := m.table.selected(); r != nil {
		keep, had = r.key, true
	}
	rows := buildRows(rowsInput{
		view: m.view, cpu: m.cpu, io: m.io, sort: m.sort, reverse: m.reverse, tree: m.tree, host: m.showHost,
		filter: m.flt, expanded: m.expanded, names: &m.names,
	})
	m.shown = 0
	for i := range rows {
		if rows[i].kind == rowSandbox {
			m.shown++
		}
	}
	m.table.sort, m.table.reverse = m.sort, m.reverse
	m.table.setRows(rows, keep, had)
	m.scrollCommands(0)
}

// scrollCommands moves the commands sideways by steps, keeps the scroll
// within the rows there are, and enables only the scroll keys that can
// move.
func (m *Model) scrollCommands(steps int) {
	m.table.scroll(steps)
	m.keys.ScrollLeft.SetEnabled(m.table.hscroll > 0)
	m.keys.ScrollRight.SetEnabled(m.table.hscroll < m.table.maxScroll())
}

// pruneTags forgets tags on targets that are gone, so a kill never aims
// at something the operator can no longer see.
func (m *Model) pruneTags() {
	for k := range m.tags {
		if k.isProcess() {
			if p := m.view.Snapshot.Proc(k.id.PID); p == nil || p.Start != k.id.Start {
				delete(m.tags, k)
			}
		} else if m.view.Sandbox(k.sandbox) == nil {
			delete(m.tags, k)
		}
	}
}

func (m *Model) setStatus(s string, isErr bool) { m.status, m.statusErr = s, isErr }

// layout sizes the parts of the screen from the window and the open panes.
func (m *Model) layout() {
	m.help.Width = m.width
	m.keys.SwitchFocus.SetEnabled(false)
	if m.tooSmall() {
		return
	}
	m.detail.follow(m.table.selected())
	body := m.height - m.headerHeight() - 1 - lipgloss.Height(m.helpView())
	// The table gets the rows it has, up to three fifths of the body; the
	// open panes share the rest, the log first.
	spare := max(body-min(len(m.table.rows)+1, body*3/5), 0)
	panelWant, detailWant := 0, 0
	if m.panel.open {
		panelWant = max(len(m.panel.lines)+3, 8)
	}
	if m.showDetail {
		detailWant = m.detail.height(m.table.selected(), m.rowCtx(), m.width)
	}
	m.panelH = min(panelWant, spare)
	if detailWant > 0 && panelWant > 0 {
		m.panelH = min(panelWant, max(spare/2, spare-detailWant))
	}
	m.detailH = min(detailWant, spare-m.panelH)
	// A pane of fewer than four rows shows nothing useful.
	if m.panelH < 4 {
		m.panelH = 0
	}
	if m.detailH < 4 {
		m.detailH = 0
	}
	// tab acts only on an open pane, and help shows it only then.
	m.detail.focused = m.detail.focused && m.detailH > 0 && !m.panel.focused
	m.keys.SwitchFocus.SetEnabled(m.panelH > 0 || m.detailH > 0)
	m.table.setSize(m.width, max(body-m.panelH-m.detailH-1, 1))
	if m.mode == modeConfirm {
		// Drawn once to measure: the scroll keys show only when the
		// targets are longer than the dialog.
		m.confirm.view(m.width, m.table.height+1+m.detailH)
		m.confirm.keys.scrollable(m.confirm.total > m.confirm.room)
	}
	m.scrollCommands(0) // a wider window may fit what needed scrolling
	if m.panelH > 0 {
		m.panel.setSize(m.width, m.panelH)
	}
}

func (m *Model) tooSmall() bool { return m.width < minWidth || m.height < minHeight }

// helpView is the footer: the keys of the mode, in one line cut to what
// matters most (footer); the filter line's error above it, wrapped.
func (m *Model) helpView() string {
	w := m.width
	switch {
	case m.mode == modeConfirm:
		return footer(m.help, m.confirm.keys.ShortHelp(), 0, w)
	case m.mode == modeSortMenu:
		return footer(m.help, newSortMenuKeys().ShortHelp(), 0, w)
	case m.mode == modeFilter || m.mode == modeSearch || m.mode == modeJump:
		v := footer(m.help, newInputKeys(m.mode == modeSearch).ShortHelp(), 0, w)
		if m.mode == modeFilter && m.fltErr != nil {
			return m.styles.Error.Render(ansi.Wrap(format.Printable(m.fltErr.Error()), w, " ")) + "\n" + v
		} else if m.mode == modeFilter {
			return ansi.Truncate(m.filterSyntaxLine(), w, "") + "\n" + v
		}
		return v
	case m.help.ShowAll:
		return footer(m.help, m.helpFooter(), 2, w)
	case m.detail.focused:
		k := m.keys
		k.Close.SetHelp("esc", "close pane")
		return footer(m.help, []key.Binding{k.SwitchFocus, k.Close, k.Up, k.Down, k.PageUp, k.PageDown, k.Quit}, 1, w)
	case m.panel.open && m.panel.focused:
		return footer(m.help, panelKeys{KeyMap: m.keys, running: m.panel.running > 0}.ShortHelp(), 1, w)
	}
	return footer(m.help, m.helpKeyMap().ShortHelp(), footerKept, w)
}

// View draws the screen.
func (m *Model) View() string {
	if m.width == 0 {
		return ""
	}
	if m.tooSmall() {
		msg := fmt.Sprintf("terminal too small: %d×%d, sandtop needs at least %d×%d", m.width, m.height, minWidth, minHeight)
		return lipgloss.NewStyle().Width(m.width).MaxHeight(m.height).Render(msg)
	}
	parts := []string{m.styles.header(m.headerState(), m.width)}
	if m.bar != nil {
		parts = append(parts, m.bar.view(m.styles, m.width))
	}
	tableH := m.table.height + 1
	switch {
	case m.help.ShowAll && m.mode == modeNormal:
		parts = append(parts, m.helpPageView(m.helpBodyHeight()))
		return lipgloss.JoinVertical(lipgloss.Left, append(parts, m.statusView(), m.helpView())...)
	case m.mode == modeConfirm:
		parts = append(parts, m.confirm.view(m.width, tableH+m.detailH))
	case m.mode == modeSortMenu:
		parts = append(parts, m.sortMenuView(tableH))
	case len(m.table.rows) == 0:
		parts = append(parts, lipgloss.Place(m.width, tableH, lipgloss.Center, lipgloss.Center, m.emptyView()))
	default:
		parts = append(parts, m.table.view(m.rowCtx()))
	}
	if m.detailH > 0 && m.mode != modeConfirm {
		parts = append(parts, m.detail.view(m.table.selected(), m.rowCtx(), m.width, m.detailH))
	}
	if m.panelH > 0 {
		parts = append(parts, m.panel.view())
	}
	parts = append(parts, m.statusView(), m.helpView())
	return lipgloss.JoinVertical(lipgloss.Left, parts...)
}

func (m *Model) rowCtx() *rowCtx {
	return &rowCtx{view: m.view, cpu: m.cpu, users: m.users, tags: m.tags, grace: m.grace}
}

func (m *Model) headerState() headerState {
	return headerState{
		view: m.view, sum: m.sum, interval: m.interval, readOnly: m.ReadOnly(),
		sort: m.sort, tree: m.tree, filter: m.filterQ, shown: m.shown, scanErr: m.scanErr,
		held:   m.mode == modeConfirm && m.pending != nil,
		replay: m.bar != nil,
		tagged: len(m.tags),
		rec:    m.rec,
		cpu:    m.cpu,
		row:    m.table.cursor + 1, rows: len(m.table.rows),
		above: m.table.offset, below: max(len(m.table.rows)-m.table.offset-m.table.height, 0),
	}
}

func (m *Model) emptyView() string {
	s := m.styles
	if m.view == nil {
		return s.Status.Render("scanning…")
	}
	if m.filterQ != "" {
		return s.HeaderText.Render(fmt.Sprintf("no sandbox matches %q", m.filterQ)) + "\n" +
			s.Status.Render("esc clears the filter, / edits it")
	}
	lines := []string{
		s.Title.Render("no sandboxes on " + format.Printable(m.view.Host)),
		"",
		s.HeaderText.Render(format.Count(len(m.view.Unattributed), "process runs", "processes run") + " here, none of them in a sandbox sandtop knows."),
		s.Status.Render("press a to list them as the host group."),
		s.Status.Render("sandboxes are recognised by rules: `sandtop rules` lists them;"),
		s.Status.Render("`sandtop demo` starts a fake fleet to try sandtop on."),
	}
	return lipgloss.JoinVertical(lipgloss.Center, lines...)
}

func (m *Model) statusView() string {
	switch m.mode {
	case modeFilter:
		return "filter " + m.input.View()
	case modeSearch:
		return "search " + m.input.View()
	case modeJump:
		return "jump to (03:12, 03:12:30, +90s, -5m, RFC 3339) " + m.input.View()
	}
	status, isErr := m.status, m.statusErr
	if status == "" && !m.panel.open {
		status, isErr = m.lastTeardown, m.lastFailed
	}
	if status == "" {
		status = m.note
	}
	if status == "" {
		return ""
	}
	st := m.styles.Status
	if isErr {
		st = m.styles.Error
	}
	// Messages quote what processes chose (a target's ID, a refused
	// process's comm): the line is escaped here, whoever built it.
	return st.Render(ansi.Truncate(format.Printable(status), m.width, "…"))
}

// filterSyntax is the filter language's help, drawn under the full key
// help as help.Model draws a column: key faint-accented, words faint.
func (m *Model) filterSyntax() string {
	h := m.styles.Help
	sep := h.FullSeparator.Render(" • ")
	lines := []string{m.styles.HeaderFaint.Render("filter terms (/ or F4; all must hold):")}
	cur := ""
	for _, l := range query.Syntax {
		item := h.FullKey.Render(l[0]) + " " + h.FullDesc.Render(l[1])
		switch {
		case cur == "":
			cur = item
		case ansi.StringWidth(cur+sep+item) <= m.width:
			cur += sep + item
		default:
			lines = append(lines, cur)
			cur = item
		}
	}
	return strings.Join(append(lines, cur), "\n")
}

// filterSyntaxLine is the short reminder under the filter prompt.
func (m *Model) filterSyntaxLine() string {
	h := m.styles.Help
	var items []string
	for _, l := range query.Syntax {
		items = append(items, h.ShortKey.Render(l[0]))
	}
	return h.ShortDesc.Render("terms: ") + strings.Join(items, h.ShortSeparator.Render(" "))
}

// euidOr returns *euid, or sandtop's effective uid when euid is nil.
func euidOr(euid *int) int {
	if euid != nil {
		return *euid
	}
	return os.Geteuid()
}
