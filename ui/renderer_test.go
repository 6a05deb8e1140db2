package ui

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer the renderer's timer may write to while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	s.b.Reset()
	return out
}

// TestRendererDrawsOnlyChanges checks the renderer's two promises: a view
// equal to the one on screen costs no write at all (so an idle screen
// never wakes to draw), and a changed one rewrites only its changed lines.
func TestRendererDrawsOnlyChanges(t *testing.T) {
	out := &syncBuffer{}
	r := newRenderer(out)
	clock := time.Unix(1000, 0)
	r.now = func() time.Time { return clock }
	r.resize(40, 10)

	r.write("header 1\nrow a\nrow b")
	first := out.take()
	if !strings.Contains(first, "row a") || !strings.Contains(first, "row b") {
		t.Fatalf("first frame lacks its rows: %q", first)
	}
	clock = clock.Add(time.Second)
	r.write("header 1\nrow a\nrow b")
	if got := out.take(); got != "" || r.frames != 1 {
		t.Errorf("an unchanged view wrote %q (%d frames), want nothing", got, r.frames)
	}
	r.write("header 2\nrow a\nrow b")
	got := out.take()
	if !strings.Contains(got, "header 2") || strings.Contains(got, "row a") || strings.Contains(got, "row b") {
		t.Errorf("a one-line change wrote %q, want only the header line", got)
	}
	if r.armed {
		t.Error("a timer is armed after an immediate frame; an idle screen must arm none")
	}
	// A resize repaints every line, even the unchanged ones.
	clock = clock.Add(time.Second)
	r.resize(30, 10)
	r.write("header 2\nrow a\nrow b")
	if got := out.take(); !strings.Contains(got, "row a") || !strings.Contains(got, "row b") {
		t.Errorf("frame after a resize = %q, want every line repainted", got)
	}
}

// TestRendererCoalescesBursts checks that views asked for within one frame
// interval of the last frame are drawn once, the newest, at the end of the
// interval: a held key costs at most 60 frames a second, and none is lost.
func TestRendererCoalescesBursts(t *testing.T) {
	out := &syncBuffer{}
	r := newRenderer(out)
	r.resize(40, 10)
	r.write("v1")
	if !strings.Contains(out.take(), "v1") {
		t.Fatal("first view not drawn at once")
	}
	r.write("v2")
	r.write("v3")
	if got := out.take(); got != "" {
		t.Fatalf("views within the frame interval drawn at once: %q", got)
	}
	deadline := time.Now().Add(2 * time.Second)
	var got string
	for got == "" && time.Now().Before(deadline) {
		time.Sleep(frameInterval)
		got = out.take()
	}
	if !strings.Contains(got, "v3") || strings.Contains(got, "v2") {
		t.Errorf("end of the frame drew %q, want v3 alone", got)
	}
	r.mu.Lock()
	frames, armed := r.frames, r.armed
	r.mu.Unlock()
	if frames != 2 || armed {
		t.Errorf("%d frames, armed %v; want 2 and no timer left", frames, armed)
	}
	r.stop()
}
