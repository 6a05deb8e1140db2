package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// recordingSource is a fake source that records.
type recordingSource struct {
	*fakeSource
	st RecordingState
}

func (s *recordingSource) Recording() RecordingState { return s.st }

// TestHeaderShowsRecording: with --record the header says, at any width,
// that the host is being recorded, to which file, and how big it is.
func TestHeaderShowsRecording(t *testing.T) {
	src := &recordingSource{fakeSource: &fakeSource{views: fleetViews(1)}, st: RecordingState{Path: "incident.rec", Size: 3 << 20}}
	for _, w := range []int{minWidth, 120} {
		m := newTestModel(t, src, &fakeKiller{})
		settle(m, size(w, 24), m.Init()())
		if h := ansi.Strip(strings.Split(m.View(), "\n")[0]); !strings.Contains(h, "● REC 3.0M") || w > 100 && !strings.Contains(h, "to incident.rec") {
			t.Errorf("at %d columns the header reads %q", w, h)
		}
	}
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(120, 24), m.Init()())
	if strings.Contains(m.View(), "REC") {
		t.Error("a screen that does not record says REC")
	}
}
