package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/ui/format"
)

// headerHeight is fixed, so the table does not jump when a warning comes
// and goes; a replay adds its time bar under it.
const headerHeight = 2

func (m *Model) headerHeight() int {
	if m.bar != nil {
		return headerHeight + 1
	}
	return headerHeight
}

// summary is what the header counts, computed once per refresh.
type summary struct {
	sandboxes int
	// members are processes in sandboxes; procs are all user processes.
	members, procs int
	badges         map[model.Badge]int
	unreadable     int
}

func summarize(v *model.View) summary {
	s := summary{badges: map[model.Badge]int{}}
	if v == nil {
		return s
	}
	s.sandboxes = len(v.Sandboxes)
	for _, sb := range v.Sandboxes {
		s.members += len(sb.Members)
		for _, b := range sb.Badges {
			s.badges[b]++
		}
	}
	s.procs = s.members + len(v.Unattributed)
	s.unreadable = v.Snapshot.PartlyUnreadable
	return s
}

// headerState is what the header shows besides the counts.
type headerState struct {
	view     *model.View
	sum      summary
	interval time.Duration
	readOnly bool
	sort     sortKey
	tree     bool
	filter   string
	shown    int // sandboxes that pass the filter
	scanErr  error
	held     bool // a confirmation holds the list still
	tagged   int  // rows tagged for a kill
	replay   bool // the view is a recorded one
	rec      *RecordingState
	// row is the cursor's row (from 1) of rows, for "row 40 of 1000".
	row, rows int
	// above and below count the rows out of the window.
	above, below int
	// cpu measures the host's CPU use between refreshes.
	cpu *cpuSampler
}

func (s *Styles) header(h headerState, width int) string {
	sep := s.HeaderFaint.Render("  ")
	// Each part has a rank: when the line is too long for the window the
	// highest ranks go first (host name, time, process totals), and the
	// badge counts, what on-call looks at first, never go.
	type part struct {
		text string
		drop int // 0: never dropped
	}
	parts := []part{{s.Title.Render("sandtop"), 0}}
	mark := "READ-ONLY"
	if h.replay {
		mark = "REPLAY"
	}
	if h.readOnly {
		if s.Plain {
			parts = append(parts, part{"[" + mark + "]", 0})
		} else {
			parts = append(parts, part{s.ReadOnly.Render(mark), 0})
		}
	}
	if h.rec != nil {
		// Every command line on the host goes to this file: the mark and
		// the size come first, the file's name after the counts; neither
		// leaves the header for room.
		rec := "● REC " + format.Bytes(uint64(max(h.rec.Size, 0)))
		if h.rec.Stopped != "" {
			rec = "REC stopped: " + format.Printable(h.rec.Stopped)
		}
		parts = append(parts, part{s.Warning.Render(rec), 0})
	}
	when := func() string {
		if h.replay {
			return "recorded " + h.view.Time.Local().Format("15:04:05")
		}
		return h.view.Time.Format("15:04:05") + " every " + format.Duration(h.interval)
	}
	switch {
	case h.view == nil && h.replay:
		parts = append(parts, part{s.HeaderFaint.Render("reading the recording…"), 0})
	case h.view == nil:
		parts = append(parts, part{s.HeaderFaint.Render("scanning…"), 0}, part{s.HeaderFaint.Render("every " + format.Duration(h.interval)), 2})
	default:
		var badges []string
		for _, b := range model.Badges {
			if h.sum.badges[b] == 0 && !alwaysCounted(b) {
				continue
			}
			badges = append(badges, s.Badge(b)+" "+s.HeaderText.Render(fmt.Sprint(h.sum.badges[b])))
		}
		parts = append(parts,
			part{s.HeaderText.Render(format.Count(h.sum.sandboxes, "sandbox", "sandboxes")), 0},
			part{strings.Join(badges, " "), 0})
		if h.tagged > 0 {
			parts = append(parts, part{s.Warning.Render(fmt.Sprintf("%d tagged", h.tagged)), 0})
		}
		if h.rec != nil {
			parts = append(parts, part{s.Warning.Render("to " + format.Printable(h.rec.Path)), 0})
		}
		parts = append(parts,
			part{s.HeaderFaint.Render(fmt.Sprintf("%s in them · %d on host", format.Count(h.sum.members, "process", "processes"), h.sum.procs)), 1},
			part{s.HeaderFaint.Render(when()), 2},
			part{s.HeaderText.Render(format.Printable(h.view.Host)), 3})
		if meters := s.meters(h.view.Snapshot.Host, h.cpu); meters != "" {
			parts = append(parts, part{meters, 4})
		}
	}
	for drop := 4; drop > 0; drop-- {
		w := 0
		for _, p := range parts {
			w += ansi.StringWidth(p.text) + 2
		}
		if w-2 <= width {
			break
		}
		parts = slices.DeleteFunc(parts, func(p part) bool { return p.drop == drop })
	}
	top := make([]string, len(parts))
	for i, p := range parts {
		top[i] = p.text
	}

	var second []string
	mode := "flat"
	if h.tree {
		mode = "tree"
	}
	second = append(second, s.HeaderFaint.Render("sort "+h.sort.String()+" · "+mode))
	if h.rows > 0 {
		pos := fmt.Sprintf("row %d of %d", h.row, h.rows)
		if h.above > 0 || h.below > 0 {
			pos += fmt.Sprintf(" (↑%d ↓%d more)", h.above, h.below)
		}
		second = append(second, s.HeaderFaint.Render(pos))
	}
	if h.filter != "" {
		second = append(second, s.HeaderText.Render(fmt.Sprintf("filter %q: %d of %d sandboxes", h.filter, h.shown, h.sum.sandboxes)))
	}
	if h.held {
		second = append(second, s.Warning.Render("list held while you confirm"))
	}
	if h.sum.unreadable > 0 {
		second = append(second, s.Warning.Render(format.Unreadable(h.sum.unreadable)))
	}
	if h.scanErr != nil {
		second = append(second, s.Error.Render("scan failed: "+format.Printable(h.scanErr.Error())))
	}
	first := strings.Join(top, sep)
	if ansi.StringWidth(first) > width {
		// Still too wide with only what never goes: one space between
		// the parts rather than two.
		first = strings.Join(top, " ")
	}
	return ansi.Truncate(first, width, "…") + "\n" + ansi.Truncate(strings.Join(second, sep), width, "…")
}

// meters is the host's CPU, memory and load in one compact part, as htop's
// meters show them: "cpu 12%  mem 3.1G/7.8G  load 0.52 0.40 0.33". It is
// the first part of the header to go when the line is narrow; "" when the
// snapshot has no host figures (a fixture, an old recording).
func (s *Styles) meters(h *proc.Host, c *cpuSampler) string {
	if h == nil {
		return ""
	}
	label := s.HeaderFaint.Render
	cpu := "-"
	st := s.HeaderText
	if c != nil && c.hostKnown {
		cpu = fmt.Sprintf("%.0f%%", c.host)
		if hi, ok := s.CPU(c.host); ok {
			st = hi
		}
	}
	used := h.MemTotal - min(h.MemAvailable, h.MemTotal)
	return label("cpu ") + st.Render(cpu) +
		label("  mem ") + s.HeaderText.Render(format.Bytes(used)+"/"+format.Bytes(h.MemTotal)) +
		label("  load ") + s.HeaderText.Render(fmt.Sprintf("%.2f %.2f %.2f", h.Load[0], h.Load[1], h.Load[2]))
}

// alwaysCounted reports whether the header counts badge b even at 0: the
// badges of sandboxes an operator tears down. The trouble a Watch finds
// (oom, stuck, hollow) is counted only when some sandbox has it, so that
// an 80-column header keeps room for it when it matters.
func alwaysCounted(b model.Badge) bool {
	switch b {
	case model.BadgeOOM, model.BadgeStuck, model.BadgeHollow:
		return false
	}
	return true
}
