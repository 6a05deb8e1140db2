package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/model"
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
	replay   bool // the view is a recorded one
}

func (s *Styles) header(h headerState, width int) string {
	sep := s.HeaderFaint.Render("  ")
	var top []string
	top = append(top, s.Title.Render("sandtop"))
	mark := "READ-ONLY"
	if h.replay {
		mark = "REPLAY"
	}
	if h.readOnly {
		if s.Plain {
			top = append(top, "["+mark+"]")
		} else {
			top = append(top, s.ReadOnly.Render(mark))
		}
	}
	when := func() string {
		if h.replay {
			return "recorded " + h.view.Time.Local().Format("15:04:05")
		}
		return h.view.Time.Format("15:04:05") + " every " + interval(h.interval)
	}
	switch {
	case h.view == nil && h.replay:
		top = append(top, s.HeaderFaint.Render("reading the recording…"))
	case h.view == nil:
		top = append(top, s.HeaderFaint.Render("scanning…"), s.HeaderFaint.Render("every "+interval(h.interval)))
	default:
		top = append(top,
			s.HeaderText.Render(format.Printable(h.view.Host)),
			s.HeaderFaint.Render(when()),
			s.HeaderText.Render(fmt.Sprintf("%s · %d processes in them · %d on host",
				plural(h.sum.sandboxes, "sandbox", "sandboxes"), h.sum.members, h.sum.procs)))
		var badges []string
		for _, b := range model.Badges {
			badges = append(badges, s.Badge(b)+" "+s.HeaderText.Render(fmt.Sprint(h.sum.badges[b])))
		}
		top = append(top, strings.Join(badges, " "))
	}

	var second []string
	mode := "flat"
	if h.tree {
		mode = "tree"
	}
	second = append(second, s.HeaderFaint.Render("sort "+h.sort.String()+" · "+mode))
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
	return ansi.Truncate(strings.Join(top, sep), width, "…") + "\n" + ansi.Truncate(strings.Join(second, sep), width, "…")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// interval spells a refresh interval without trailing zero units: "1s",
// "250ms", "1h" rather than "1h0m0s".
func interval(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
