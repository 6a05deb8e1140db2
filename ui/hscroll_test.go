package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestCommandsScrollSideways: > and shift+→ move long commands left by a
// step, < and shift+← back; each key is enabled (and so in help) only when
// it can move, and at a width where every command fits neither is.
func TestCommandsScrollSideways(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(100, 40), m.Init()())
	settle(m, keys("e")...)
	if m.keys.ScrollLeft.Enabled() || !m.keys.ScrollRight.Enabled() {
		t.Fatalf("at 100 columns, long commands: left %v right %v", m.keys.ScrollLeft.Enabled(), m.keys.ScrollRight.Enabled())
	}
	const cmd = "/usr/bin/containerd-shim-runc-v2"
	if l := ansi.Strip(lineWith(t, m.View(), "300 ")); !strings.Contains(l, cmd) {
		t.Fatalf("before scrolling: %q", l)
	}
	settle(m, keys(">")...)
	l := ansi.Strip(lineWith(t, m.View(), "300 "))
	if strings.Contains(l, "/usr/bin/") || !strings.Contains(l, "…/containerd-shim-runc-v2 -names") {
		t.Errorf("after >: %q", l)
	}
	if !m.keys.ScrollLeft.Enabled() {
		t.Error("< disabled once scrolled")
	}
	settle(m, keys("shift+right", "shift+right")...)
	settle(m, keys("<", "shift+left", "shift+left")...)
	if m.table.hscroll != 0 || m.keys.ScrollLeft.Enabled() {
		t.Errorf("back at the left: scroll %d, < enabled %v", m.table.hscroll, m.keys.ScrollLeft.Enabled())
	}
	for range 100 {
		settle(m, keys(">")...)
	}
	if m.table.hscroll != m.table.maxScroll() || m.keys.ScrollRight.Enabled() {
		t.Errorf("scrolled past the longest command: %d of %d, > enabled %v", m.table.hscroll, m.table.maxScroll(), m.keys.ScrollRight.Enabled())
	}
	m.help.ShowAll = true
	if !strings.Contains(m.View(), "scroll commands left") || strings.Contains(m.View(), "scroll commands right") {
		t.Errorf("help does not follow what can move:\n%s", m.View())
	}

	settle(m, size(400, 40))
	if m.table.hscroll != 0 || m.keys.ScrollLeft.Enabled() || m.keys.ScrollRight.Enabled() {
		t.Errorf("at 400 columns every command fits: scroll %d, keys %v %v", m.table.hscroll, m.keys.ScrollLeft.Enabled(), m.keys.ScrollRight.Enabled())
	}
}
