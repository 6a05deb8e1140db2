package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/model"
)

// Recording is a recorded host that the screen replays instead of
// scanning one. Its methods are called from tea.Cmds, never from Update.
type Recording interface {
	// Len is the number of snapshots, Time when snapshot i was taken.
	Len() int
	Time(i int) time.Time
	// View groups snapshot i. prev is the view of snapshot i-1 when the
	// screen steps forward onto i (sticky attribution, as the live screen
	// had), nil otherwise.
	View(i int, prev *model.View) (*model.View, error)
	// Find reads a time as typed (03:12, +90s, -5m, RFC 3339…) and returns
	// the snapshot shown at that moment.
	Find(at string) (int, error)
}

// playSpeeds are the replay speeds space plays at and + and - pick from.
var playSpeeds = []int{1, 10, 60}

// TimeKeys move through a recording. They exist only in replay.
type TimeKeys struct {
	Next, Prev     key.Binding
	Forward, Back  key.Binding
	Jump           key.Binding
	Play           key.Binding
	Faster, Slower key.Binding
}

// DefaultTimeKeys returns the replay bindings.
func DefaultTimeKeys() TimeKeys {
	return TimeKeys{
		Next:    key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "next frame")),
		Prev:    key.NewBinding(key.WithKeys("T"), key.WithHelp("T", "previous frame")),
		Forward: key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "+1 minute")),
		Back:    key.NewBinding(key.WithKeys("["), key.WithHelp("[", "-1 minute")),
		Jump:    key.NewBinding(key.WithKeys("j"), key.WithHelp("j", "jump to a time")),
		Play:    key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "play/pause")),
		Faster:  key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "faster")),
		Slower:  key.NewBinding(key.WithKeys("-"), key.WithHelp("-", "slower")),
	}
}

func (k *TimeKeys) all() []*key.Binding {
	return []*key.Binding{&k.Next, &k.Prev, &k.Forward, &k.Back, &k.Jump, &k.Play, &k.Faster, &k.Slower}
}

// timebar is the replay's place in the recording: the frame shown, the
// frame asked for, and whether it plays. It draws the time bar under the
// header.
type timebar struct {
	rec     Recording
	keys    TimeKeys
	n       int
	first   time.Time
	last    time.Time
	at      int // the frame shown; -1 before the first arrives
	want    int // the frame being loaded; -1 when none is
	queued  int // the frame to load once want arrives; -1 for none
	playing bool
	speed   int // index into playSpeeds
	playGen int
}

func newTimebar(rec Recording) *timebar {
	b := &timebar{rec: rec, keys: DefaultTimeKeys(), n: rec.Len(), at: -1, want: -1, queued: -1}
	if b.n > 0 {
		b.first, b.last = rec.Time(0), rec.Time(b.n-1)
	}
	b.enableKeys()
	return b
}

// owns reports whether msg is a replay key, enabled or not: a disabled
// one is answered by the timebar, never by a binding the live screen has
// on the same key.
func (b *timebar) owns(msg tea.KeyMsg) bool {
	for _, k := range b.keys.all() {
		if bound(*k, msg) {
			return true
		}
	}
	return false
}

// enableKeys turns off the keys that lead nowhere from the frame shown,
// so that help never offers them.
func (b *timebar) enableKeys() {
	k := &b.keys
	start, end := b.at <= 0, b.at >= b.n-1
	k.Prev.SetEnabled(!start)
	k.Back.SetEnabled(!start)
	k.Next.SetEnabled(!end)
	k.Forward.SetEnabled(!end)
	k.Play.SetEnabled(!end || b.playing)
	k.Faster.SetEnabled(b.speed < len(playSpeeds)-1)
	k.Slower.SetEnabled(b.speed > 0)
	k.Jump.SetEnabled(b.n > 1)
}

// shown takes the frame that arrived.
func (b *timebar) shown(i int) {
	b.at, b.want = i, -1
	if b.at >= b.n-1 {
		b.playing = false
	}
	b.enableKeys()
}

// pos is the frame the screen is on its way to: the one queued, else the
// one loading, else the one shown. Keys step from there, so that two
// presses before a frame arrives move two frames.
func (b *timebar) pos() int {
	switch {
	case b.queued >= 0:
		return b.queued
	case b.want >= 0:
		return b.want
	}
	return b.at
}

// minute finds the frame a minute from the one shown: the last at or
// before that time going back, the first at or after it going forward,
// and at least one frame away.
func (b *timebar) minute(forward bool) int {
	from := b.pos()
	if from < 0 {
		return 0
	}
	t := b.rec.Time(from)
	i := from
	if forward {
		t = t.Add(time.Minute)
		for i < b.n-1 && (i == from || b.rec.Time(i).Before(t)) {
			i++
		}
		return i
	}
	t = t.Add(-time.Minute)
	for i > 0 && (i == from || b.rec.Time(i).After(t)) {
		i--
	}
	return i
}

// playDelay is how long frame i stays on screen while playing: the time
// to the next frame as recorded, divided by the speed.
func (b *timebar) playDelay(i int) time.Duration {
	if i+1 >= b.n {
		return 0
	}
	d := b.rec.Time(i+1).Sub(b.rec.Time(i)) / time.Duration(playSpeeds[b.speed])
	return max(d, 10*time.Millisecond)
}

func (b *timebar) speedLabel() string { return fmt.Sprintf("%d×", playSpeeds[b.speed]) }

// view draws the time bar: play state and speed, the recorded time, a
// bar of the position, the offset from the start and the frame number.
func (b *timebar) view(s *Styles, width int) string {
	if b.n == 0 || b.at < 0 {
		return s.HeaderFaint.Render("loading the recording…")
	}
	state := "❚❚ paused"
	if b.playing {
		state = "▶ " + b.speedLabel()
	} else if s.Plain {
		state = "paused"
	}
	if s.Plain && b.playing {
		state = "playing " + b.speedLabel()
	}
	at := b.rec.Time(b.at)
	left := s.Title.Render(state) + "  " + s.HeaderText.Render(at.Local().Format("2006-01-02 15:04:05.000"))
	right := s.HeaderFaint.Render(fmt.Sprintf("+%s of %s  frame %d/%d", offset(at.Sub(b.first)), offset(b.last.Sub(b.first)), b.at+1, b.n))
	barW := width - lipgloss.Width(left) - lipgloss.Width(right) - 4
	if barW < 10 {
		return ansi.Truncate(left+"  "+right, width, "…")
	}
	fill := barW
	if b.n > 1 {
		fill = int(float64(barW) * float64(at.Sub(b.first)) / float64(max(b.last.Sub(b.first), 1)))
	}
	fill = min(max(fill, 0), barW)
	track, done := "─", "━"
	if s.Plain {
		track, done = "-", "="
	}
	bar := s.Title.Render(strings.Repeat(done, fill)) + s.HeaderFaint.Render(strings.Repeat(track, barW-fill))
	return left + "  " + bar + "  " + right
}

// offset spells a duration in the recording to the second: 5m12s, 1h0m3s.
func offset(d time.Duration) string { return d.Round(time.Second).String() }

// replayHelp is the help of the replay screen: the time keys first, then
// the live screen's keys that still apply.
type replayHelp struct {
	KeyMap
	time TimeKeys
}

func (k replayHelp) ShortHelp() []key.Binding {
	return []key.Binding{k.time.Play, k.time.Next, k.time.Prev, k.time.Jump, k.Filter, k.Details, k.ShowHelp, k.Quit}
}

func (k replayHelp) FullHelp() [][]key.Binding {
	t := k.time
	return append([][]key.Binding{{t.Play, t.Faster, t.Slower, t.Next, t.Prev, t.Forward, t.Back, t.Jump}}, k.KeyMap.FullHelp()...)
}
