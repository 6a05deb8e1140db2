package ui

import (
	"testing"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// needsSource is a fakeSource that keeps what the screen last asked for.
type needsSource struct {
	fakeSource
	needs []model.ResourceNeeds
}

func (s *needsSource) SetResourceNeeds(n model.ResourceNeeds) { s.needs = append(s.needs, n) }

// TestScreenReadsOnlyWhatItShows: a refresh asks the source for the
// badges' figures, the IO and pressure figures only while their columns
// are on screen, and every figure of the sandbox in the detail pane only.
func TestScreenReadsOnlyWhatItShows(t *testing.T) {
	src := &needsSource{fakeSource: fakeSource{views: fleetViews(1)}}
	m := newTestModel(t, src, nil)
	settle(m, size(120, 30), m.Init()())
	last := func() model.ResourceNeeds {
		t.Helper()
		settle(m, keys("r")...)
		if len(src.needs) == 0 {
			t.Fatal("the screen never said what it needs")
		}
		return src.needs[len(src.needs)-1]
	}
	if n := last(); n.Figures != model.BadgeFigures || len(n.Full) != 0 {
		t.Errorf("120 columns, no detail pane: asks for %+v, want the badges' figures only", n)
	}
	settle(m, size(250, 30))
	pressure := proc.HavePressureCPU | proc.HavePressureMemory | proc.HavePressureIO
	if n := last(); n.Figures != model.BadgeFigures|proc.HaveIO|pressure || len(n.Full) != 0 {
		t.Errorf("250 columns (IO and PRESSURE shown): asks for %+v", n)
	}
	settle(m, keys("d")...)
	sb := m.table.selected().sb
	if n := last(); sb == nil || len(n.Full) != 1 || !n.Full[sb.Key()] {
		t.Errorf("detail pane open on %v: asks for %+v, want every figure of it", sb, n)
	}
}
