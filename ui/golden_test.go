package ui

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// TestViewGolden pins the main screens, drawn with no color on a fixed
// terminal from the fixture fleet. Regenerate with -update after a
// deliberate change, and read the diff.
func TestViewGolden(t *testing.T) {
	for _, tc := range []struct {
		name     string
		w, h     int
		readOnly bool
		views    []*model.View
		steps    func(t *testing.T, m *Model)
		want     []string // substrings the golden file must hold, so a bad -update is caught
	}{
		{name: "collapsed", w: 120, h: 24, want: []string{"7d1e2c3a4b5c6 ", "[orphan] [paused]", "50.0"}},
		{name: "expanded_tree", w: 120, h: 30, steps: press("e"), want: []string{"└─ nginx: master", "   ├─ nginx: worker"}},
		{name: "flat_by_cpu", w: 120, h: 30, steps: press("e", "t", "s"), want: []string{"sort cpu · flat"}},
		{name: "detail_sandbox", w: 120, h: 36, steps: func(t *testing.T, m *Model) {
			cursorTo(t, m, rowKey{sandbox: sk(idOrphan)})
			settle(m, keys("enter")...)
		}, want: []string{"no ancestor within 16 levels", "/run/vm0/sock/" + idOrphan, "rules.toml:1"}},
		{name: "detail_process", w: 120, h: 36, steps: func(t *testing.T, m *Model) {
			settle(m, keys("e")...)
			cursorTo(t, m, memberKey(m, idVM0, 111))
			settle(m, keys("d")...)
		}, want: []string{"111 → 2", "joined by ancestor"}},
		{name: "host_group", w: 120, h: 30, steps: func(t *testing.T, m *Model) {
			settle(m, keys("a")...)
			cursorTo(t, m, hostKey)
			settle(m, keys("l")...)
		}, want: []string{"(host)", "vim notes.txt", "alice", "└─ /usr/sbin/sshd -D"}},
		{name: "filter_orphans", w: 120, h: 20, steps: func(t *testing.T, m *Model) {
			settle(m, keys("/")...)
			settle(m, typeText("badge:orphan")...)
			settle(m, keys("enter")...)
		}, want: []string{`filter "badge:orphan": 2 of 4 sandboxes`}},
		{name: "confirm_sandbox", w: 120, h: 30, steps: func(t *testing.T, m *Model) {
			cursorTo(t, m, rowKey{sandbox: sk(idOrphan)})
			settle(m, keys("K")...)
		}, want: []string{"Tear down sandbox " + idOrphan, "[> Cancel <]", "orphan: then removes /run/vm0/sock/" + idOrphan}},
		{name: "confirm_typed", w: 120, h: 34, steps: func(t *testing.T, m *Model) {
			settle(m, keys(" ", " ", "K")...)
		}, want: []string{`Type "yes" to confirm`, "2 targets"}},
		{name: "teardown_log", w: 120, h: 34, steps: func(t *testing.T, m *Model) {
			cursorTo(t, m, rowKey{sandbox: sk(idPaused)})
			settle(m, keys("K", "t", "y")...)
		}, want: []string{"[OK]", "teardown finished", "audit: appended to"}},
		{name: "read_only", w: 120, h: 20, readOnly: true, steps: press("K"), want: []string{"[READ-ONLY]", "read-only mode: killing is disabled"}},
		{name: "empty", w: 100, h: 20, views: []*model.View{model.Build(snapshot(0, pr(500, 1, time.Hour, "/usr/sbin/sshd -D")), testRules, nil)},
			want: []string{"no sandboxes on testhost", "sandtop demo"}},
		{name: "detail_leftover", w: 120, h: 30, views: leftoverViews(), steps: func(t *testing.T, m *Model) {
			cursorTo(t, m, rowKey{sandbox: "vm0:dead-run-1"})
			settle(m, keys("enter")...)
		}, want: []string{"[leftover]", "none left", "dir        /run/vm0/sock/dead-run-1", "[leftover] 1 leftover: 1 dir", "leftovers  1 leftover: 1 dir", "kept: supervisor /usr/local/bin/runner"}},
		{name: "full_help", w: 120, h: 24, steps: press("?"), want: []string{"expand/collapse all", "fewer keys"}},
		{name: "narrow", w: 80, h: 24, steps: press("e"), want: []string{"BADGES/COMMAND", "[orphan] 2 [zombie] 1 [paused] 1", "row 1 of 16"}},
		{name: "too_small", w: 50, h: 10, want: []string{"terminal too small: 50×10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views := tc.views
			if views == nil {
				views = fleetViews(2)
			}
			// The teardown log prints the audit path: a relative one, in a
			// scratch directory, reads the same on every run.
			var k Killer = &fakeKiller{audit: "audit.jsonl"}
			if tc.readOnly {
				k = nil
			}
			pkg, err := os.Getwd()
			if err != nil {
				t.Fatal(err)
			}
			t.Chdir(t.TempDir())
			m := newTestModel(t, &fakeSource{views: views}, k)
			settle(m, size(tc.w, tc.h), m.Init()())
			if len(views) > 1 {
				settle(m, keys("r")...) // a second scan, so CPU% is known
			}
			if tc.steps != nil {
				tc.steps(t, m)
			}
			out := m.View()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("view lacks %q:\n%s", w, out)
				}
			}
			if got := len(strings.Split(out, "\n")); got > tc.h {
				t.Errorf("view is %d lines on a %d-line terminal", got, tc.h)
			}
			if err := os.Chdir(pkg); err != nil {
				t.Fatal(err)
			}
			golden.RequireEqual(t, []byte(out))
		})
	}
}

func press(k ...string) func(*testing.T, *Model) {
	return func(_ *testing.T, m *Model) { settle(m, keys(k...)...) }
}

// memberKey is the row key of a sandbox member in the current view.
func memberKey(m *Model, sandbox string, pid int) rowKey {
	return rowKey{sandbox: sk(sandbox), id: m.view.Snapshot.Proc(pid).ID()}
}

// leftoverViews is the fixture fleet with the directories a vm0 run left
// when its Firecracker was SIGKILLed by hand (its runner alive: kept) and
// those of a run that no runner owns.
func leftoverViews() []*model.View {
	vs := fleetViews(2)
	f := model.NewLeftovers(testRules)
	v := vs[1]
	found := model.Found{Globs: f.Globs(v), Paths: []proc.PathEntry{
		{Path: "/run/vm0/sock/dead-run-1", Kind: proc.KindDir, ModTime: v.Time.Add(-42 * time.Minute)},
	}}
	vs[1] = f.Apply(v, found)
	return vs
}
