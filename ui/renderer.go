package ui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"
)

// bubbletea v1's standard renderer flushes on a free-running ticker, 60
// times a second by default (standard_renderer.go: time.NewTicker in
// start, flush in listen), whether or not the view changed; WithFPS only
// moves the rate (1 to 120), and the renderer is an unexported interface
// that cannot be replaced. A screen left open in a tmux pane thus woke
// ~120 times a second (the ticker, and the Go runtime's sysmon kept from
// its deep sleep by it): strace -c over 10 idle seconds counted 1,736
// futex, 1,161 epoll_pwait and 678 nanosleep calls.
//
// So sandtop draws its own frames. A Screen runs the program without a
// renderer (tea.WithoutRenderer) and draws each view bubbletea asks for
// when it differs from the last one drawn: at once when the last frame is
// older than frameInterval, else on a one-shot timer at the end of the
// frame, which coalesces a burst (held keys) as the ticker did. An idle
// screen arms no timer at all: between two refreshes that change nothing
// on screen the process does not wake. Without a renderer bubbletea also
// leaves the terminal alone, so the Screen puts it in raw mode and the
// alternate screen, and reports its size (at start and on SIGWINCH), as
// the standard renderer and bubbletea's tty handling do.

// frameInterval is the shortest time between two frames (bubbletea's
// default 60 fps): a keystroke is drawn at once, or at most this late.
const frameInterval = time.Second / 60

// renderer draws views to a terminal in the alternate screen, line by line,
// rewriting only the lines that changed (as the standard renderer does).
type renderer struct {
	mu  sync.Mutex
	out io.Writer
	// now is time.Now; tests replace it.
	now func() time.Time

	width, height int
	// view is the newest view asked for; drawn is the lines on screen.
	view  string
	drawn []string
	fresh bool // the screen must be repainted whole (start, resize)
	// last is when the last frame was written; timer, when armed, draws
	// the pending view at the end of the frame interval.
	last  time.Time
	timer *time.Timer
	armed bool
	// frames counts frames written, for tests.
	frames int
	buf    bytes.Buffer
}

func newRenderer(out io.Writer) *renderer {
	return &renderer{out: out, now: time.Now, fresh: true}
}

// write asks for view to be drawn.
func (r *renderer) write(view string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if view == r.view && !r.fresh {
		return
	}
	r.view = view
	if r.armed {
		return // the armed timer draws the newest view
	}
	if wait := frameInterval - r.now().Sub(r.last); wait > 0 {
		r.armed = true
		if r.timer == nil {
			r.timer = time.AfterFunc(wait, r.tick)
		} else {
			r.timer.Reset(wait)
		}
		return
	}
	r.flush()
}

func (r *renderer) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.armed {
		r.armed = false
		r.flush()
	}
}

// resize takes the terminal's new size; the next frame repaints it whole.
func (r *renderer) resize(w, h int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.width, r.height, r.fresh = w, h, true
}

// flush writes r.view, rewriting only the lines that differ from what is
// on screen. Called with r.mu held.
func (r *renderer) flush() {
	lines := strings.Split(r.view, "\n")
	if r.height > 0 && len(lines) > r.height {
		lines = lines[len(lines)-r.height:]
	}
	b := &r.buf
	b.Reset()
	if r.fresh {
		b.WriteString(ansi.EraseEntireScreen)
		r.drawn = nil
	}
	b.WriteString(ansi.CursorHomePosition)
	for i, line := range lines {
		if i < len(r.drawn) && r.drawn[i] == line {
			if i < len(lines)-1 {
				b.WriteByte('\n')
			}
			continue
		}
		if r.width > 0 {
			line = ansi.Truncate(line, r.width, "")
		}
		b.WriteByte('\r')
		b.WriteString(line)
		if ansi.StringWidth(line) < r.width {
			b.WriteString(ansi.EraseLineRight)
		}
		if i < len(lines)-1 {
			b.WriteString("\r\n")
		}
	}
	if len(r.drawn) > len(lines) {
		b.WriteString(ansi.EraseScreenBelow)
	}
	_, _ = r.out.Write(b.Bytes())
	r.drawn, r.fresh, r.last = lines, false, r.now()
	r.frames++
}

// stop disarms the timer; nothing is drawn after it returns.
func (r *renderer) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed = false
	if r.timer != nil {
		r.timer.Stop()
	}
}

// framed hands every view of the model it wraps to the renderer, and the
// window's size with it.
type framed struct {
	tea.Model
	r *renderer
}

func (f framed) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if ws, ok := msg.(tea.WindowSizeMsg); ok {
		f.r.resize(ws.Width, ws.Height)
	}
	m, cmd := f.Model.Update(msg)
	f.Model = m
	return f, cmd
}

func (f framed) View() string {
	f.r.write(f.Model.View())
	return ""
}

// ScreenOptions are the terminal modes a Screen sets besides the
// alternate screen, the hidden cursor and bracketed paste.
type ScreenOptions struct {
	// Mouse reports clicks, the wheel and drags (tea.WithMouseCellMotion).
	Mouse bool
}

// Screen runs a model full-screen on a terminal with the renderer above.
// Options that need bubbletea's renderer (tea.WithAltScreen,
// tea.WithMouseCellMotion) are the Screen's business: ScreenOptions.
type Screen struct {
	p       *tea.Program
	r       *renderer
	in, out *os.File
	o       ScreenOptions
}

// NewScreen makes the program for m on the terminal in/out. opts are
// passed on to tea.NewProgram after the options the Screen sets (input,
// output, context, no renderer).
func NewScreen(ctx context.Context, m tea.Model, in, out *os.File, o ScreenOptions, opts ...tea.ProgramOption) *Screen {
	r := newRenderer(out)
	all := append([]tea.ProgramOption{
		tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithoutRenderer(),
	}, opts...)
	return &Screen{p: tea.NewProgram(framed{Model: m, r: r}, all...), r: r, in: in, out: out, o: o}
}

// Kill ends the program at once (tea.Program.Kill); Run returns.
func (s *Screen) Kill() { s.p.Kill() }

// Run runs the program until it quits or is killed, and returns the final
// model (the one given to NewScreen, not a wrapper) and bubbletea's error.
// The terminal is restored whatever happens.
func (s *Screen) Run() (tea.Model, error) {
	state, err := term.MakeRaw(s.in.Fd())
	if err != nil {
		return nil, fmt.Errorf("raw mode: %w", err)
	}
	// The alternate screen, the cursor hidden, bracketed paste on: what
	// tea.WithAltScreen and bubbletea's defaults set; mouse cell motion
	// with SGR coordinates as tea.WithMouseCellMotion does.
	set := ansi.SetModeAltScreenSaveCursor + ansi.EraseEntireScreen + ansi.CursorHomePosition +
		ansi.HideCursor + ansi.SetModeBracketedPaste
	reset := ansi.ResetModeBracketedPaste + ansi.ShowCursor + ansi.ResetModeAltScreenSaveCursor
	if s.o.Mouse {
		set += ansi.SetModeMouseButtonEvent + ansi.SetModeMouseExtSgr
		reset = ansi.ResetModeMouseButtonEvent + ansi.ResetModeMouseExtSgr + reset
	}
	_, _ = io.WriteString(s.out, set)
	defer func() {
		s.r.stop()
		_, _ = io.WriteString(s.out, reset)
		_ = term.Restore(s.in.Fd(), state)
	}()

	// Without a renderer bubbletea does not watch the terminal's size:
	// send it now and on every SIGWINCH, from a goroutine that blocks on
	// the signal (no polling).
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			if w, h, err := term.GetSize(s.out.Fd()); err == nil {
				s.p.Send(tea.WindowSizeMsg{Width: w, Height: h})
			}
			select {
			case <-winch:
			case <-done:
				return
			}
		}
	}()

	final, err := s.p.Run()
	if f, ok := final.(framed); ok {
		final = f.Model
	}
	return final, err
}
