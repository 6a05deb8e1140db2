package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/model"
)

// TestFooterKeepsHelpAndQuit: at every width from the minimum up, the
// footer ends with "? more keys" and "q quit", whole; the hints that do
// not fit leave from the least important, never half cut.
func TestFooterKeepsHelpAndQuit(t *testing.T) {
	for _, w := range []int{minWidth, 80, 100, 120} {
		m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
		settle(m, size(w, 24), m.Init()())
		foot := ansi.Strip(m.helpView())
		if !strings.HasSuffix(strings.TrimRight(foot, " "), "? more keys • q F10 quit") || strings.Contains(foot, "…") {
			t.Errorf("at %d columns the footer reads %q", w, foot)
		}
		if w == 80 && !strings.Contains(foot, "K F9 kill") {
			t.Errorf("at 80 columns the footer lost the kill key before the sort: %q", foot)
		}
	}
}

// TestHelpReachesEveryKeyAtMinimumSize: on the smallest screen sandtop
// draws, the full help scrolls (j, pgdn) through every enabled key and
// every filter term; no line is cut.
func TestHelpReachesEveryKeyAtMinimumSize(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(minWidth, minHeight), m.Init()())
	settle(m, keys("?")...)
	if !strings.Contains(ansi.Strip(m.helpView()), "scroll") {
		t.Fatalf("the help does not fit %d×%d and its footer does not say it scrolls: %q", minWidth, minHeight, m.helpView())
	}
	seen := ""
	for range 20 {
		seen += ansi.Strip(m.View()) + "\n"
		settle(m, keys("pgdown")...)
	}
	if strings.Contains(seen, "…") {
		t.Errorf("a help line is cut:\n%s", seen)
	}
	for _, g := range m.keys.FullHelp() {
		for _, b := range g {
			if b.Enabled() && !strings.Contains(seen, b.Help().Desc) {
				t.Errorf("help never shows %q (%s) at %d×%d", b.Help().Desc, b.Help().Key, minWidth, minHeight)
			}
		}
	}
	if !strings.Contains(seen, "does not hold") {
		t.Error("help never reaches the last filter term")
	}
	settle(m, keys("g")...)
	if m.helpOffset != 0 || !m.help.ShowAll {
		t.Errorf("g: offset %d, help open %v", m.helpOffset, m.help.ShowAll)
	}
	settle(m, keys("esc")...)
	if m.help.ShowAll {
		t.Error("esc left the help open")
	}
	settle(m, keys("?", "j")...)
	if m.table.cursor != 0 {
		t.Error("j under the help moved the list")
	}
}

// TestNarrowDropsColumnsByRank: IO and PRESSURE show only where the
// command keeps 48 cells beside them; a narrow window drops MEM, then AGE,
// then CPU, until the command has a usable width; the last column's title
// is never cut.
func TestNarrowDropsColumnsByRank(t *testing.T) {
	names := func(cols []column) string {
		var s []string
		for _, c := range cols {
			s = append(s, c.title)
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		w, idW int
		want   string
	}{
		{140, 20, "ID/PID RUNTIME/USER PROCS/S CPU% MEM AGE/TIME+ IO PRESSURE BADGES/COMMAND"},
		{130, 20, "ID/PID RUNTIME/USER PROCS/S CPU% MEM AGE/TIME+ IO BADGES/COMMAND"},
		{120, 20, "ID/PID RUNTIME/USER PROCS/S CPU% MEM AGE/TIME+ BADGES/COMMAND"},
		{85, 13, "ID/PID RUNTIME/USER PROCS/S CPU% AGE/TIME+ BADGES/COMMAND"},
		{80, 20, "ID/PID RUNTIME/USER PROCS/S CPU% BADGES/COMMAND"},
		{72, 20, "ID/PID RUNTIME/USER PROCS/S BADGES/COMMAND"},
	} {
		cols, rest := fitColumns(allColumns(tc.idW), tc.w, minCommandW)
		if got := names(cols); got != tc.want || rest < minCommandW {
			t.Errorf("%d columns, ID %d: %s with %d for commands, want %s", tc.w, tc.idW, got, rest, tc.want)
		}
	}
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(80, 24), m.Init()())
	if h := m.table.header(); !strings.Contains(h, "BADGES/COMMAND") {
		t.Errorf("80-column title: %q", h)
	}
}

// TestDeepTreeCompresses: at 80 columns a chain 12 processes deep keeps
// room for the deepest command; the indent narrows instead.
func TestDeepTreeCompresses(t *testing.T) {
	procs := fleetProcs()
	parent := 301
	for i := range 12 {
		pid := 600 + i
		procs = append(procs, pr(pid, parent, time.Minute, fmt.Sprintf("/bin/sh -c level%d", i), cg("/kubepods/"+idShim)))
		parent = pid
	}
	v := model.NewBuilder(testRules).Build(snapshot(0, procs...), nil)
	m := newTestModel(t, &fakeSource{views: []*model.View{v}}, &fakeKiller{})
	settle(m, size(80, 40), m.Init()())
	cursorTo(t, m, rowKey{sandbox: sk(idShim)})
	settle(m, keys("l")...)
	if l := ansi.Strip(lineWith(t, m.View(), "611 ")); !strings.Contains(l, "/bin/sh -c level11") {
		t.Errorf("deepest row at 80 columns: %q (indent %d)", l, m.table.indent)
	}
	if m.table.indent >= 3 {
		t.Errorf("indent %d at depth %d", m.table.indent, m.table.depth)
	}
}

// TestTabOnlyWithALog: tab is enabled, and in help, only while a
// teardown log is open.
func TestTabOnlyWithALog(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(120, 40), m.Init()())
	settle(m, keys("?")...)
	if page := strings.Join(m.helpLines(), "\n"); strings.Contains(page, "focus log") || m.keys.SwitchFocus.Enabled() {
		t.Errorf("tab offered with no log:\n%s", page)
	}
	settle(m, keys("?")...)
	cursorTo(t, m, rowKey{sandbox: sk(idPaused)})
	settle(m, keys("K", "t", "y")...)
	if !m.panel.open || !m.keys.SwitchFocus.Enabled() {
		t.Fatal("tab disabled with the log open")
	}
}
