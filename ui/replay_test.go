package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
)

// fakeRecording replays fixed views; Find takes "+Ns" only (the real
// time forms are the recording package's, tested there).
type fakeRecording struct {
	views []*model.View
	prevs []bool // whether View was given the frame before, per call
}

func (r *fakeRecording) Len() int             { return len(r.views) }
func (r *fakeRecording) Time(i int) time.Time { return r.views[i].Time }
func (r *fakeRecording) View(i int, prev *model.View) (*model.View, error) {
	r.prevs = append(r.prevs, prev != nil)
	if prev != nil && prev != r.views[i-1] {
		return nil, fmt.Errorf("frame %d given a prev that is not frame %d", i, i-1)
	}
	return r.views[i], nil
}
func (r *fakeRecording) Find(at string) (int, error) {
	d, err := time.ParseDuration(strings.TrimPrefix(at, "+"))
	if err != nil {
		return 0, err
	}
	t := r.views[0].Time.Add(d)
	if t.After(r.views[len(r.views)-1].Time) {
		return 0, fmt.Errorf("%s is outside the recording", at)
	}
	for i := len(r.views) - 1; i >= 0; i-- {
		if !r.views[i].Time.After(t) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s is outside the recording", at)
}

func newReplayModel(t *testing.T, n int) (*Model, *fakeRecording) {
	t.Helper()
	rec := &fakeRecording{views: fleetViews(n)}
	m := newTestModel(t, nil, failKiller{t: t}, func(o *Options) { o.Replay = rec })
	settle(m, size(140, 30))
	settle(m, run(m.Init())...)
	return m, rec
}

func TestReplayMovesInTime(t *testing.T) {
	m, rec := newReplayModel(t, 5)
	if !m.ReadOnly() || m.bar.at != 0 {
		t.Fatalf("read-only %v, at frame %d", m.ReadOnly(), m.bar.at)
	}
	screen := m.View()
	for _, want := range []string{"REPLAY", "recorded ", "frame 1/5", "paused", "+0s of 4s", "space play/pause"} {
		if !strings.Contains(screen, want) {
			t.Errorf("first frame lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(m.helpView(), "previous frame") {
		t.Errorf("help offers the previous frame at the first:\n%s", m.helpView())
	}
	step := func(want int, ks ...string) {
		t.Helper()
		settle(m, keys(ks...)...)
		if m.bar.at != want {
			t.Fatalf("after %v: frame %d, want %d (status %q)", ks, m.bar.at, want, m.status)
		}
	}
	step(1, "t")
	step(3, "t", "t")
	step(2, "T")
	step(0, "[") // a minute back: the start
	if m.status != "" {
		t.Errorf("status %q", m.status)
	}
	step(0, "T")
	if m.status != "at the start of the recording" {
		t.Errorf("T at the start: status %q", m.status)
	}
	step(4, "]") // a minute on: the end
	step(4, "t")
	if m.status != "at the end of the recording" || strings.Contains(m.helpView(), "next frame") {
		t.Errorf("t at the end: status %q, help\n%s", m.status, m.helpView())
	}
	step(2, append([]string{"j"}, append(strings.Split("+2s", ""), "enter")...)...)
	if !strings.Contains(m.View(), "frame 3/5") {
		t.Errorf("after the jump:\n%s", m.View())
	}
	settle(m, keys(append([]string{"j"}, append(strings.Split("+9s", ""), "enter")...)...)...)
	if m.bar.at != 2 || !m.statusErr || !strings.Contains(m.status, "outside the recording") {
		t.Errorf("a jump outside: frame %d, status %q", m.bar.at, m.status)
	}
	// Stepping forward hands the frame before to grouping, for sticky
	// attribution; a jump does not.
	if !rec.prevs[1] || rec.prevs[len(rec.prevs)-1] {
		t.Errorf("prev given: %v", rec.prevs)
	}
}

func TestReplayPlays(t *testing.T) {
	m, _ := newReplayModel(t, 6)
	settle(m, keys("+", "+")...)
	if m.bar.speedLabel() != "60×" || m.keys.Faster.Enabled() || m.bar.keys.Faster.Enabled() {
		t.Fatalf("speed %s", m.bar.speedLabel())
	}
	start := time.Now()
	settle(m, keys(" ")...) // plays to the end: five 1 s gaps at 60×
	if m.bar.at != 5 || m.bar.playing {
		t.Fatalf("after playing: frame %d, playing %v", m.bar.at, m.bar.playing)
	}
	if d := time.Since(start); d < 5*time.Second/60 || d > 5*time.Second {
		t.Errorf("played 5 s of recording at 60× in %v", d)
	}
	if m.bar.keys.Play.Enabled() {
		t.Error("play is offered at the end")
	}
}

// TestReplayKeepsTheScreen checks that the live screen's keys still work
// on the past, and that the replay's own keys won over theirs.
func TestReplayKeepsTheScreen(t *testing.T) {
	m, _ := newReplayModel(t, 3)
	tree := m.tree
	settle(m, keys("t")...)
	if m.tree != tree || m.bar.at != 1 {
		t.Fatalf("t toggled the tree (%v) or did not step (frame %d)", m.tree != tree, m.bar.at)
	}
	settle(m, keys("f5")...)
	if m.tree == tree {
		t.Error("F5 does not toggle the tree in replay")
	}
	settle(m, keys("down", "down")...)
	cur := m.table.cursor
	settle(m, keys("j", "esc")...)
	if m.table.cursor != cur || m.mode != modeNormal {
		t.Errorf("j moved the cursor (%d → %d) or left a prompt open", cur, m.table.cursor)
	}
	settle(m, keys("/", "n", "g", "i", "n", "x", "enter")...)
	if !strings.Contains(m.View(), `filter "nginx": 1 of`) {
		t.Errorf("filter:\n%s", m.View())
	}
	settle(m, keys("K")...)
	if !strings.Contains(m.status, "read-only") {
		t.Errorf("K in replay: status %q", m.status)
	}
	settle(m, keys("?")...)
	page := strings.Join(m.helpLines(), "\n")
	for _, want := range []string{"next frame", "+1 minute", "jump to a time", "F5", "tree view"} {
		if !strings.Contains(page, want) {
			t.Errorf("full help lacks %q:\n%s", want, page)
		}
	}
	// A replay has no teardown log: tab has nothing to focus.
	for _, dead := range []string{"refresh", "kill", "focus log"} {
		if strings.Contains(page, dead) {
			t.Errorf("full help offers %q in replay:\n%s", dead, page)
		}
	}
}
