package ui

import (
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"

	"github.com/sandtop/sandtop/ui/theme"
)

// Styles are built once, when the model is made; View only applies them.
type Styles struct {
	// Theme is the palette on this renderer, and the marks (badges, step
	// tags) the CLI draws the same way.
	*theme.Theme

	Title, HeaderText, HeaderFaint, ReadOnly, Warning lipgloss.Style

	ColumnHeader, Row, ProcRow, FaintRow, HostRow lipgloss.Style
	Selected, Tagged                              lipgloss.Style

	Status, Error lipgloss.Style

	Pane, PaneFocused, PaneTitle, DetailKey, DetailValue lipgloss.Style

	Modal, ModalTitle, Button, ButtonFocused, Danger lipgloss.Style

	Help help.Styles
}

// DefaultStyles builds the styles for the current color profile of the
// default lipgloss renderer (which honours NO_COLOR).
func DefaultStyles() *Styles {
	return NewStyles(lipgloss.DefaultRenderer())
}

// NewStyles builds the styles for one renderer.
func NewStyles(r *lipgloss.Renderer) *Styles {
	c := r.NewStyle
	s := &Styles{
		Theme:       theme.New(r),
		Title:       c().Bold(true).Foreground(theme.Palette.Accent),
		HeaderText:  c().Foreground(theme.Palette.Text),
		HeaderFaint: c().Foreground(theme.Palette.Faint),
		ReadOnly:    c().Bold(true).Background(theme.Palette.ReadOnlyBg).Foreground(theme.Palette.ReadOnlyFg).Padding(0, 1),
		Warning:     c().Foreground(theme.Palette.Warn),

		ColumnHeader: c().Bold(true).Foreground(theme.Palette.Faint),
		Row:          c().Foreground(theme.Palette.Text).Bold(true),
		ProcRow:      c().Foreground(theme.Palette.Text),
		FaintRow:     c().Foreground(theme.Palette.Faint),
		HostRow:      c().Foreground(theme.Palette.Faint).Italic(true),
		Selected:     c().Background(theme.Palette.SelectedBg).Foreground(theme.Palette.SelectedFg).Bold(true),
		Tagged:       c().Foreground(theme.Palette.Tagged).Bold(true),

		Status: c().Foreground(theme.Palette.Faint),
		Error:  c().Foreground(theme.Palette.Fail).Bold(true),

		Pane:        c().Border(lipgloss.RoundedBorder()).BorderForeground(theme.Palette.Border).Padding(0, 1),
		PaneFocused: c().Border(lipgloss.RoundedBorder()).BorderForeground(theme.Palette.Accent).Padding(0, 1),
		PaneTitle:   c().Bold(true).Foreground(theme.Palette.Accent),
		DetailKey:   c().Foreground(theme.Palette.Faint),
		DetailValue: c().Foreground(theme.Palette.Text),

		Modal:         c().Border(lipgloss.DoubleBorder()).BorderForeground(theme.Palette.ModalBorder).Padding(0, 2),
		ModalTitle:    c().Bold(true).Foreground(theme.Palette.Fail),
		Button:        c().Foreground(theme.Palette.Text).Padding(0, 1),
		ButtonFocused: c().Reverse(true).Bold(true).Padding(0, 1),
		Danger:        c().Bold(true).Foreground(theme.Palette.Fail),
	}
	key := c().Foreground(theme.Palette.Accent)
	desc := c().Foreground(theme.Palette.Faint)
	sep := c().Foreground(theme.Palette.Border)
	s.Help = help.Styles{
		Ellipsis: sep, ShortKey: key, ShortDesc: desc, ShortSeparator: sep,
		FullKey: key, FullDesc: desc, FullSeparator: sep,
	}
	return s
}
