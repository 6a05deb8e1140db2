package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

// escape is the SGR sequence st opens with.
func escape(st lipgloss.Style) string {
	return strings.SplitN(st.Render("x"), "x", 2)[0]
}

// coloured is the text line shows right after the escape esc, spaces
// trimmed.
func coloured(line, esc string) string {
	_, after, ok := strings.Cut(line, esc)
	if !ok {
		return ""
	}
	text, _, _ := strings.Cut(after, "\x1b[")
	return strings.TrimSpace(text)
}

// lineWith is the screen line whose text (without colours) contains s.
func lineWith(t *testing.T, screen, s string) string {
	t.Helper()
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(ansi.Strip(l), s) {
			return l
		}
	}
	t.Fatalf("no line with %q in:\n%s", s, ansi.Strip(screen))
	return ""
}

// TestRowColours: htop's conventions in colour -- a stopped (T) or zombie
// (Z) process's state letter in its own colour, sandbox rows set apart
// from process rows -- and without colour, no escape at all while the
// state letter still tells the states apart.
func TestRowColours(t *testing.T) {
	color := lipgloss.NewRenderer(nil)
	color.SetColorProfile(termenv.ANSI256)
	color.SetHasDarkBackground(true)
	s := NewStyles(color)
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{}, func(o *Options) { o.Styles = s })
	settle(m, size(160, 40), m.Init()())
	settle(m, keys("e")...)
	screen := m.View()

	for _, c := range []struct {
		row   string
		state byte
	}{{"python3 /app/main.py", 'T'}, {"└─ [sh]", 'Z'}} {
		st, ok := s.State(c.state)
		if !ok {
			t.Fatalf("no colour for state %c", c.state)
		}
		if l := lineWith(t, screen, c.row); coloured(l, escape(st)) != string(c.state) {
			t.Errorf("state %c of %q not in its colour: %q", c.state, c.row, l)
		}
	}
	if l := lineWith(t, screen, "├─ /pause"); strings.Contains(l, "\x1b[1;") {
		t.Errorf("a sleeping process's row has a highlight: %q", l)
	}
	sb, pr := lineWith(t, screen, idPaused[:12]), lineWith(t, screen, "├─ /pause")
	if !strings.HasPrefix(sb, escape(s.Row)) || strings.HasPrefix(pr, escape(s.Row)) || escape(s.Row) == escape(s.ProcRow) {
		t.Errorf("sandbox and process rows look alike:\n%q\n%q", sb, pr)
	}

	plain := lipgloss.NewRenderer(nil)
	plain.SetColorProfile(termenv.Ascii)
	m = newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{}, func(o *Options) { o.Styles = NewStyles(plain) })
	settle(m, size(160, 40), m.Init()())
	settle(m, keys("e")...)
	screen = m.View()
	if strings.Contains(screen, "\x1b[") {
		t.Errorf("colour on a terminal without colour:\n%q", screen)
	}
	if l := lineWith(t, screen, "python3 /app/main.py"); !strings.Contains(l, "      T ") {
		t.Errorf("without colour the state letter must still say it: %q", l)
	}
}

// TestCPUColours: a CPU% from CPUBusyPct is coloured busy, from CPUHighPct
// high; none below, none while CPU is not known yet, none without colour.
func TestCPUColours(t *testing.T) {
	color := lipgloss.NewRenderer(nil)
	color.SetColorProfile(termenv.ANSI256)
	s := NewStyles(color)
	known := &cpuSampler{valid: true}
	for _, c := range []struct {
		pct  float64
		c    *cpuSampler
		want bool
	}{{10, known, false}, {55, known, true}, {150, known, true}, {150, &cpuSampler{}, false}} {
		h := highlights{theme: s.Theme}
		var b strings.Builder
		h.cpu(&b, c.pct, c.c)
		if got := len(h.spans) == 1; got != c.want {
			t.Errorf("%.0f%% (known %v): highlighted %v, want %v", c.pct, c.c.known(), got, c.want)
		}
	}
	busy, _ := s.CPU(55)
	high, _ := s.CPU(95)
	if escape(busy) == escape(high) {
		t.Error("busy and high CPU look alike")
	}
	plain := lipgloss.NewRenderer(nil)
	plain.SetColorProfile(termenv.Ascii)
	if _, ok := NewStyles(plain).CPU(95); ok {
		t.Error("a CPU colour without colour")
	}
}
