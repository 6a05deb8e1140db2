// Package theme is sandtop's one palette and the marks both the CLI and
// the live screen draw with it: badge pills and teardown step tags. It
// knows colors, not screens, so the CLI renders with it without importing
// the TUI.
package theme

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/teardown"
)

// Palette is every color sandtop uses, as ANSI-256 indexes that read on
// light and dark terminals alike.
var Palette = struct {
	Text, Faint, Accent, Border         lipgloss.AdaptiveColor
	SelectedBg, SelectedFg, Tagged      lipgloss.AdaptiveColor
	Orphan, Zombie, Paused, PillText    lipgloss.AdaptiveColor
	Leftover                            lipgloss.AdaptiveColor
	OK, Fail, Skip, Warn                lipgloss.AdaptiveColor
	ReadOnlyBg, ReadOnlyFg, ModalBorder lipgloss.AdaptiveColor
	// htop's conventions for a process's state (R running, D in
	// uninterruptible sleep, T stopped, Z zombie) and its CPU use.
	StateRun, StateDisk, StateStopped, StateZombie lipgloss.AdaptiveColor
	CPUBusy, CPUHigh                               lipgloss.AdaptiveColor
}{
	Text:        lipgloss.AdaptiveColor{Light: "235", Dark: "252"},
	Faint:       lipgloss.AdaptiveColor{Light: "245", Dark: "243"},
	Accent:      lipgloss.AdaptiveColor{Light: "25", Dark: "75"},
	Border:      lipgloss.AdaptiveColor{Light: "250", Dark: "239"},
	SelectedBg:  lipgloss.AdaptiveColor{Light: "153", Dark: "24"},
	SelectedFg:  lipgloss.AdaptiveColor{Light: "232", Dark: "255"},
	Tagged:      lipgloss.AdaptiveColor{Light: "130", Dark: "220"},
	Orphan:      lipgloss.AdaptiveColor{Light: "160", Dark: "203"},
	Zombie:      lipgloss.AdaptiveColor{Light: "130", Dark: "214"},
	Paused:      lipgloss.AdaptiveColor{Light: "31", Dark: "81"},
	PillText:    lipgloss.AdaptiveColor{Light: "255", Dark: "232"},
	Leftover:    lipgloss.AdaptiveColor{Light: "96", Dark: "139"},
	OK:          lipgloss.AdaptiveColor{Light: "28", Dark: "78"},
	Fail:        lipgloss.AdaptiveColor{Light: "160", Dark: "203"},
	Skip:        lipgloss.AdaptiveColor{Light: "130", Dark: "221"},
	Warn:        lipgloss.AdaptiveColor{Light: "130", Dark: "221"},
	ReadOnlyBg:  lipgloss.AdaptiveColor{Light: "220", Dark: "220"},
	ReadOnlyFg:  lipgloss.AdaptiveColor{Light: "232", Dark: "232"},
	ModalBorder: lipgloss.AdaptiveColor{Light: "160", Dark: "203"},

	StateRun:     lipgloss.AdaptiveColor{Light: "28", Dark: "78"},
	StateDisk:    lipgloss.AdaptiveColor{Light: "160", Dark: "203"},
	StateStopped: lipgloss.AdaptiveColor{Light: "31", Dark: "81"},
	StateZombie:  lipgloss.AdaptiveColor{Light: "130", Dark: "214"},
	CPUBusy:      lipgloss.AdaptiveColor{Light: "130", Dark: "221"},
	CPUHigh:      lipgloss.AdaptiveColor{Light: "160", Dark: "203"},
}

// CPU use (percent of one core) from which a row's CPU% is coloured busy,
// and high.
const (
	CPUBusyPct = 50
	CPUHighPct = 90
)

// Theme is the palette bound to one renderer (one output and its color
// profile), with the marks the CLI and the screen share. Built once;
// rendering only applies it.
type Theme struct {
	// Plain is true on terminals without color (NO_COLOR, dumb terminals):
	// badges then read "[orphan]" instead of a colored pill, because a
	// colorless pill would be an unmarked word.
	Plain bool

	badges   map[model.Badge]lipgloss.Style
	states   map[byte]lipgloss.Style
	cpuBusy  lipgloss.Style
	cpuHigh  lipgloss.Style
	steps    map[teardown.Status]lipgloss.Style
	renderer *lipgloss.Renderer
}

// New builds the theme for one renderer.
func New(r *lipgloss.Renderer) *Theme {
	c := r.NewStyle
	pill := func(bg lipgloss.AdaptiveColor) lipgloss.Style {
		return c().Background(bg).Foreground(Palette.PillText).Bold(true).Padding(0, 1)
	}
	return &Theme{
		renderer: r,
		Plain:    r.ColorProfile() == termenv.Ascii,
		badges: map[model.Badge]lipgloss.Style{
			model.BadgeOrphan:   pill(Palette.Orphan),
			model.BadgeZombie:   pill(Palette.Zombie),
			model.BadgePaused:   pill(Palette.Paused),
			model.BadgeLeftover: pill(Palette.Leftover),
			model.BadgeOOM:      pill(Palette.Fail),
			model.BadgeStuck:    pill(Palette.StateDisk),
			model.BadgeHollow:   pill(Palette.Warn),
		},
		states: map[byte]lipgloss.Style{
			'R': c().Foreground(Palette.StateRun).Bold(true),
			'D': c().Foreground(Palette.StateDisk).Bold(true),
			'T': c().Foreground(Palette.StateStopped).Bold(true),
			't': c().Foreground(Palette.StateStopped).Bold(true),
			'Z': c().Foreground(Palette.StateZombie).Bold(true),
		},
		cpuBusy: c().Foreground(Palette.CPUBusy),
		cpuHigh: c().Foreground(Palette.CPUHigh).Bold(true),
		steps: map[teardown.Status]lipgloss.Style{
			teardown.OK:   c().Foreground(Palette.OK).Bold(true),
			teardown.Fail: c().Foreground(Palette.Fail).Bold(true),
			teardown.Skip: c().Foreground(Palette.Skip).Bold(true),
		},
	}
}

// Renderer is the renderer the theme was built for: styles made from it
// (the CLI's tables, the screen's styles) honour the same color profile.
func (t *Theme) Renderer() *lipgloss.Renderer { return t.renderer }

// Badge renders one badge: a colored pill, or "[orphan]" without color.
// Both forms are len(b)+2 cells wide, so columns line up either way.
func (t *Theme) Badge(b model.Badge) string {
	if t.Plain {
		return "[" + string(b) + "]"
	}
	st, ok := t.badges[b]
	if !ok {
		return "[" + string(b) + "]"
	}
	return st.Render(string(b))
}

// Badges renders a sandbox's badges, space separated.
func (t *Theme) Badges(bs []model.Badge) string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = t.Badge(b)
	}
	return strings.Join(out, " ")
}

// Step renders a teardown status tag: [OK], [FAIL], [SKIP].
func (t *Theme) Step(st teardown.Status) string {
	tag := "[" + strings.ToUpper(string(st)) + "]"
	if t.Plain {
		return tag
	}
	return t.steps[st].Render(tag)
}

// State is the style of a process's one-letter state (htop's colours: R
// green, D red, T/t stopped, Z zombie), and false for a state shown in the
// row's own colour. Without colour there is no style: the letter, which
// the table always shows, is what tells them apart.
func (t *Theme) State(st byte) (lipgloss.Style, bool) {
	if t.Plain {
		return lipgloss.Style{}, false
	}
	s, ok := t.states[st]
	return s, ok
}

// CPU is the style of a CPU% (of one core) from CPUBusyPct up, and false
// below it. Without colour the number itself says it.
func (t *Theme) CPU(pct float64) (lipgloss.Style, bool) {
	switch {
	case t.Plain || pct < CPUBusyPct:
		return lipgloss.Style{}, false
	case pct >= CPUHighPct:
		return t.cpuHigh, true
	default:
		return t.cpuBusy, true
	}
}
