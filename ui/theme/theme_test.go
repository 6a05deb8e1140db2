package theme

import (
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/teardown"
)

// TestMarksLineUp checks that a badge and a step tag take the same cells
// with color as without, so the CLI's and the screen's columns line up on
// every terminal, and that without color they still say what they mark.
func TestMarksLineUp(t *testing.T) {
	plain := lipgloss.NewRenderer(nil)
	plain.SetColorProfile(termenv.Ascii)
	color := lipgloss.NewRenderer(nil)
	color.SetColorProfile(termenv.ANSI256)
	p, c := New(plain), New(color)
	if !p.Plain || c.Plain {
		t.Fatalf("Plain = %v (ascii), %v (256 colors)", p.Plain, c.Plain)
	}
	for _, b := range []model.Badge{model.BadgeOrphan, model.BadgeZombie, model.BadgePaused} {
		if got := p.Badge(b); got != "["+string(b)+"]" {
			t.Errorf("plain badge %q", got)
		}
		if pw, cw := ansi.StringWidth(p.Badge(b)), ansi.StringWidth(c.Badge(b)); pw != cw {
			t.Errorf("badge %s: %d cells plain, %d in color", b, pw, cw)
		}
	}
	for st, want := range map[teardown.Status]string{teardown.OK: "[OK]", teardown.Fail: "[FAIL]", teardown.Skip: "[SKIP]"} {
		if got := p.Step(st); got != want {
			t.Errorf("plain step %q, want %q", got, want)
		}
		if got := ansi.Strip(c.Step(st)); got != want {
			t.Errorf("color step reads %q, want %q", got, want)
		}
	}
	if got := p.Badges([]model.Badge{model.BadgeOrphan, model.BadgePaused}); got != "[orphan] [paused]" {
		t.Errorf("Badges = %q", got)
	}
}
