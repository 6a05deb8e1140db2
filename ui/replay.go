package ui

import (
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sandtop/sandtop/model"
)

// The replay screen is the live screen on a Recording: the same table,
// filter, sort, detail pane and tree, with no Killer at all (as in watch
// mode) and a time bar instead of the refresh loop. Frames are read and
// grouped in tea.Cmds, one at a time.

// frameMsg carries one replayed frame, grouped.
type frameMsg struct {
	i     int
	view  *model.View
	users map[int]string
	err   error
}

// playMsg shows the next frame while playing; gen drops the ticks of a
// play chain that a pause or a speed change replaced.
type playMsg struct{ gen int }

// foundMsg answers a jump to a typed time.
type foundMsg struct {
	at  string
	i   int
	err error
}

func frameCmd(rec Recording, i int, prev *model.View, known map[int]string, lookup func(int) string) tea.Cmd {
	return func() tea.Msg {
		v, err := rec.View(i, prev)
		if err != nil {
			return frameMsg{i: i, err: err}
		}
		return frameMsg{i: i, view: v, users: nameUsers(v, known, lookup)}
	}
}

func findCmd(rec Recording, at string) tea.Cmd {
	return func() tea.Msg {
		i, err := rec.Find(at)
		return foundMsg{at: at, i: i, err: err}
	}
}

// load asks for frame i, or queues it behind the frame being loaded: a
// key held down skips the frames it outran.
func (m *Model) load(i int) tea.Cmd {
	b := m.bar
	i = min(max(i, 0), b.n-1)
	if b.want >= 0 {
		b.queued = i
		return nil
	}
	var prev *model.View
	if m.view != nil && i == b.at+1 {
		prev = m.view
	}
	b.want, b.queued = i, -1
	return frameCmd(b.rec, i, prev, m.users, m.lookup)
}

// framed shows a frame that arrived, and loads the next one when it is
// queued or the replay plays.
func (m *Model) framed(msg frameMsg) tea.Cmd {
	b := m.bar
	b.want = -1
	if msg.err != nil {
		b.playing = false
		b.enableKeys()
		m.setStatus(fmt.Sprintf("frame %d: %v", msg.i+1, msg.err), true)
	} else {
		b.shown(msg.i)
		m.apply(viewMsg{view: msg.view, users: msg.users})
	}
	if q := b.queued; q >= 0 && q != b.at {
		b.queued = -1
		return m.load(q)
	}
	b.queued = -1
	if b.playing {
		return m.playTick()
	}
	if msg.err == nil && b.at == b.n-1 && b.n > 1 {
		m.setStatus("the end of the recording", false)
	}
	return nil
}

func (m *Model) playTick() tea.Cmd {
	gen := m.bar.playGen
	return tea.Tick(m.bar.playDelay(m.bar.at), func(time.Time) tea.Msg { return playMsg{gen: gen} })
}

func (m *Model) played(msg playMsg) tea.Cmd {
	b := m.bar
	if msg.gen != b.playGen || !b.playing {
		return nil
	}
	return m.load(b.at + 1)
}

// pause stops playing; a tick already armed is dropped by its gen.
func (b *timebar) pause() {
	b.playing = false
	b.playGen++
	b.enableKeys()
}

// timeKey handles the replay keys.
func (m *Model) timeKey(msg tea.KeyMsg) tea.Cmd {
	b := m.bar
	k := &b.keys
	if b.at < 0 {
		m.setStatus("loading the recording…", false)
		return nil
	}
	switch {
	case key.Matches(msg, k.Next):
		b.pause()
		return m.load(b.pos() + 1)
	case key.Matches(msg, k.Prev):
		b.pause()
		return m.load(b.pos() - 1)
	case key.Matches(msg, k.Forward):
		b.pause()
		return m.load(b.minute(true))
	case key.Matches(msg, k.Back):
		b.pause()
		return m.load(b.minute(false))
	case key.Matches(msg, k.Jump):
		b.pause()
		m.mode = modeJump
		m.input.SetValue("")
		return m.input.Focus()
	case key.Matches(msg, k.Play):
		if b.playing {
			b.pause()
			m.setStatus("paused", false)
			return nil
		}
		b.playing = true
		b.playGen++
		b.enableKeys()
		m.setStatus("playing at "+b.speedLabel(), false)
		return m.playTick()
	case key.Matches(msg, k.Faster, k.Slower):
		if key.Matches(msg, k.Faster) {
			b.speed++
		} else {
			b.speed--
		}
		b.enableKeys()
		m.setStatus("replay speed "+b.speedLabel(), false)
		if b.playing && b.want < 0 {
			b.playGen++
			return m.playTick()
		}
	case bound(k.Faster, msg) || bound(k.Slower, msg):
		m.setStatus("replay speed is "+b.speedLabel()+": the speeds are 1×, 10× and 60×", false)
	case bound(k.Jump, msg):
		m.setStatus("the recording has one frame", false)
	case b.at <= 0:
		m.setStatus("at the start of the recording", false)
	default:
		m.setStatus("at the end of the recording", false)
	}
	return nil
}

// bound reports whether msg is one of b's keys, enabled or not.
func bound(b key.Binding, msg tea.KeyMsg) bool {
	for _, k := range b.Keys() {
		if k == msg.String() {
			return true
		}
	}
	return false
}

// jumpKey edits the time typed after j; enter jumps.
func (m *Model) jumpKey(msg tea.KeyMsg) tea.Cmd {
	ik := newInputKeys(false)
	switch {
	case key.Matches(msg, m.keys.ForceQuit):
		return m.quit(msg)
	case key.Matches(msg, ik.Accept):
		m.mode = modeNormal
		m.input.Blur()
		return findCmd(m.bar.rec, m.input.Value())
	case key.Matches(msg, ik.Cancel):
		m.mode = modeNormal
		m.input.Blur()
		return nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return cmd
}

func (m *Model) found(msg foundMsg) tea.Cmd {
	if msg.err != nil {
		m.setStatus(msg.err.Error(), true)
		return nil
	}
	m.setStatus("jumped to "+msg.at, false)
	return m.load(msg.i)
}

// replayKeys adapts the live screen's keys to a replay: t, j and space
// are the timebar's, so the tree is on F5 and down on ↓ only; there is
// no refresh to run or speed up.
func (k *KeyMap) replayKeys() {
	k.Tree.SetKeys("f5")
	k.Tree.SetHelp("F5", "tree view")
	k.Down.SetKeys("down")
	k.Down.SetHelp("↓", "down")
	k.Refresh.SetEnabled(false)
	k.Faster.SetEnabled(false)
	k.Slower.SetEnabled(false)
}
