package ui

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/teardown"
)

// palette is every color sandtop uses, as ANSI-256 indexes that read on
// light and dark terminals alike.
var palette = struct {
	Text, Faint, Accent, Border         lipgloss.AdaptiveColor
	SelectedBg, SelectedFg, Tagged      lipgloss.AdaptiveColor
	Orphan, Zombie, Paused, PillText    lipgloss.AdaptiveColor
	OK, Fail, Skip, Warn                lipgloss.AdaptiveColor
	ReadOnlyBg, ReadOnlyFg, ModalBorder lipgloss.AdaptiveColor
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
	OK:          lipgloss.AdaptiveColor{Light: "28", Dark: "78"},
	Fail:        lipgloss.AdaptiveColor{Light: "160", Dark: "203"},
	Skip:        lipgloss.AdaptiveColor{Light: "130", Dark: "221"},
	Warn:        lipgloss.AdaptiveColor{Light: "130", Dark: "221"},
	ReadOnlyBg:  lipgloss.AdaptiveColor{Light: "220", Dark: "220"},
	ReadOnlyFg:  lipgloss.AdaptiveColor{Light: "232", Dark: "232"},
	ModalBorder: lipgloss.AdaptiveColor{Light: "160", Dark: "203"},
}

// Styles are built once, when the model is made; View only applies them.
type Styles struct {
	// Plain is true on terminals without color (NO_COLOR, dumb terminals):
	// badges then read "[orphan]" instead of a colored pill, because a
	// colorless pill would be an unmarked word.
	Plain bool

	Title, HeaderText, HeaderFaint, ReadOnly, Warning lipgloss.Style

	ColumnHeader, Row, ProcRow, FaintRow, HostRow lipgloss.Style
	Selected, Tagged                              lipgloss.Style
	badges                                        map[model.Badge]lipgloss.Style

	Status, Error lipgloss.Style

	Pane, PaneFocused, PaneTitle, DetailKey, DetailValue lipgloss.Style

	Modal, ModalTitle, Button, ButtonFocused, Danger lipgloss.Style

	steps map[teardown.Status]lipgloss.Style

	Help help.Styles

	renderer *lipgloss.Renderer
}

// Renderer is the renderer the styles were built for (the CLI's tables
// draw with it too).
func (s *Styles) Renderer() *lipgloss.Renderer { return s.renderer }

// Badges renders a sandbox's badges, space separated.
func (s *Styles) Badges(bs []model.Badge) string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = s.Badge(b)
	}
	return strings.Join(out, " ")
}

// DefaultStyles builds the styles for the current color profile of the
// default lipgloss renderer (which honours NO_COLOR).
func DefaultStyles() *Styles {
	return NewStyles(lipgloss.DefaultRenderer())
}

// NewStyles builds the styles for one renderer.
func NewStyles(r *lipgloss.Renderer) *Styles {
	c := r.NewStyle
	pill := func(bg lipgloss.AdaptiveColor) lipgloss.Style {
		return c().Background(bg).Foreground(palette.PillText).Bold(true).Padding(0, 1)
	}
	s := &Styles{
		renderer:    r,
		Plain:       r.ColorProfile() == termenv.Ascii,
		Title:       c().Bold(true).Foreground(palette.Accent),
		HeaderText:  c().Foreground(palette.Text),
		HeaderFaint: c().Foreground(palette.Faint),
		ReadOnly:    c().Bold(true).Background(palette.ReadOnlyBg).Foreground(palette.ReadOnlyFg).Padding(0, 1),
		Warning:     c().Foreground(palette.Warn),

		ColumnHeader: c().Bold(true).Foreground(palette.Faint),
		Row:          c().Foreground(palette.Text),
		ProcRow:      c().Foreground(palette.Text),
		FaintRow:     c().Foreground(palette.Faint),
		HostRow:      c().Foreground(palette.Faint).Italic(true),
		Selected:     c().Background(palette.SelectedBg).Foreground(palette.SelectedFg).Bold(true),
		Tagged:       c().Foreground(palette.Tagged).Bold(true),
		badges: map[model.Badge]lipgloss.Style{
			model.BadgeOrphan: pill(palette.Orphan),
			model.BadgeZombie: pill(palette.Zombie),
			model.BadgePaused: pill(palette.Paused),
		},

		Status: c().Foreground(palette.Faint),
		Error:  c().Foreground(palette.Fail).Bold(true),

		Pane:        c().Border(lipgloss.RoundedBorder()).BorderForeground(palette.Border).Padding(0, 1),
		PaneFocused: c().Border(lipgloss.RoundedBorder()).BorderForeground(palette.Accent).Padding(0, 1),
		PaneTitle:   c().Bold(true).Foreground(palette.Accent),
		DetailKey:   c().Foreground(palette.Faint),
		DetailValue: c().Foreground(palette.Text),

		Modal:         c().Border(lipgloss.DoubleBorder()).BorderForeground(palette.ModalBorder).Padding(0, 2),
		ModalTitle:    c().Bold(true).Foreground(palette.Fail),
		Button:        c().Foreground(palette.Text).Padding(0, 1),
		ButtonFocused: c().Reverse(true).Bold(true).Padding(0, 1),
		Danger:        c().Bold(true).Foreground(palette.Fail),

		steps: map[teardown.Status]lipgloss.Style{
			teardown.OK:   c().Foreground(palette.OK).Bold(true),
			teardown.Fail: c().Foreground(palette.Fail).Bold(true),
			teardown.Skip: c().Foreground(palette.Skip).Bold(true),
		},
	}
	key := c().Foreground(palette.Accent)
	desc := c().Foreground(palette.Faint)
	sep := c().Foreground(palette.Border)
	s.Help = help.Styles{
		Ellipsis: sep, ShortKey: key, ShortDesc: desc, ShortSeparator: sep,
		FullKey: key, FullDesc: desc, FullSeparator: sep,
	}
	return s
}

// Badge renders one badge: a colored pill, or "[orphan]" without color.
// Both forms are len(b)+2 cells wide, so columns line up either way.
func (s *Styles) Badge(b model.Badge) string {
	if s.Plain {
		return "[" + string(b) + "]"
	}
	st, ok := s.badges[b]
	if !ok {
		return "[" + string(b) + "]"
	}
	return st.Render(string(b))
}

// Step renders a teardown status tag: [OK], [FAIL], [SKIP].
func (s *Styles) Step(st teardown.Status) string {
	tag := "[" + strings.ToUpper(string(st)) + "]"
	if s.Plain {
		return tag
	}
	return s.steps[st].Render(tag)
}
