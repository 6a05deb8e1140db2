package ui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
)

// TestConfirm drives the kill confirmation key by key.
func TestConfirm(t *testing.T) {
	// bigPod puts 60 extra processes in the pod: past the typed threshold.
	var bigPod []*proc.Process
	for i := range 60 {
		bigPod = append(bigPod, pr(1000+i, 302, time.Minute, "nginx: worker process", cg("/kubepods/"+idShim)))
	}
	for _, tc := range []struct {
		name    string
		procs   []*proc.Process
		target  func(t *testing.T, m *Model) // selects or tags
		keys    []string
		typed   string // the text the dialog must ask for; "" for one key
		ran     []string
		grace   time.Duration // the grace of the plans that ran
		ignored bool          // whether the dialog should still be open
	}{
		{name: "enter presses the focused Cancel", target: sel(idOrphan), keys: []string{"enter"}},
		{name: "n cancels", target: sel(idOrphan), keys: []string{"n"}},
		{name: "esc cancels", target: sel(idOrphan), keys: []string{"esc"}},
		{name: "y confirms", target: sel(idOrphan), keys: []string{"y"}, ran: []string{idOrphan}, grace: 5 * time.Second},
		{name: "tab then enter confirms", target: sel(idOrphan), keys: []string{"tab", "enter"}, ran: []string{idOrphan}, grace: 5 * time.Second},
		{name: "t switches to immediate SIGKILL", target: sel(idOrphan), keys: []string{"t", "y"}, ran: []string{idOrphan}},
		{name: "t twice is graceful again", target: sel(idOrphan), keys: []string{"t", "t", "y"}, ran: []string{idOrphan}, grace: 5 * time.Second},
		{name: "other keys do nothing", target: sel(idOrphan), keys: []string{"x", "K", "j"}, ignored: true},
		{name: "a process subtree", target: func(t *testing.T, m *Model) {
			settle(m, keys("e")...)
			cursorTo(t, m, memberKey(m, idShim, 302))
		}, keys: []string{"y"}, ran: []string{"pid 302"}, grace: 5 * time.Second},
		{name: "several: type yes", target: tag(idOrphan, idPaused), typed: "yes",
			keys: append(spell("yes"), "enter"), ran: []string{idOrphan, idPaused}, grace: 5 * time.Second},
		{name: "several: y is only a letter", target: tag(idOrphan, idPaused), typed: "yes", keys: []string{"y"}, ignored: true},
		{name: "several: wrong text keeps the dialog", target: tag(idOrphan, idPaused), typed: "yes",
			keys: append(spell("no"), "enter"), ignored: true},
		{name: "several: enter on Cancel cancels", target: tag(idOrphan, idPaused), typed: "yes", keys: []string{"enter"}},
		{name: "big sandbox: type the ID's start", procs: bigPod, target: sel(idShim), typed: "c0ff",
			keys: append(spell("c0ffee"), "enter"), ran: []string{idShim}, grace: 5 * time.Second},
		{name: "big sandbox: another ID's start is refused", procs: bigPod, target: sel(idShim), typed: "c0ff",
			keys: append(spell("dead"), "enter"), ignored: true},
		{name: "big sandbox: tab to the button needs the text too", procs: bigPod, target: sel(idShim), typed: "c0ff",
			keys: []string{"tab", "enter"}, ignored: true},
		{name: "big sandbox: ctrl+t then typed", procs: bigPod, target: sel(idShim), typed: "c0ff",
			keys: append([]string{"ctrl+t"}, append(spell("c0ff"), "enter")...), ran: []string{idShim}},
		{name: "a tagged process inside a tagged sandbox is not planned twice", target: func(t *testing.T, m *Model) {
			settle(m, keys("e")...)
			m.tags[rowKey{sandbox: sk(idShim)}] = true
			m.tags[memberKey(m, idShim, 302)] = true
		}, keys: []string{"y"}, ran: []string{idShim}, grace: 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := fleetViews(1)[0]
			if tc.procs != nil {
				v = rebuilt(nil, 0, nil, tc.procs...)
			}
			k := &fakeKiller{}
			m := newTestModel(t, &fakeSource{views: []*model.View{v}}, k)
			settle(m, size(120, 40), m.Init()())
			tc.target(t, m)
			settle(m, keys("K")...)
			if m.mode != modeConfirm {
				t.Fatalf("K did not open the confirmation (status %q)", m.status)
			}
			if m.confirm.focus != focusCancel {
				t.Errorf("focus starts on %v, want Cancel", m.confirm.focus)
			}
			if m.confirm.typed != (tc.typed != "") || m.confirm.want != tc.typed {
				t.Errorf("typed %v want %q; the case expects %q", m.confirm.typed, m.confirm.want, tc.typed)
			}
			var plans []*teardown.Plan
			if m.confirm != nil {
				plans = m.confirm.plans
			}
			settle(m, keys(tc.keys...)...)
			if open := m.mode == modeConfirm; open != tc.ignored {
				t.Fatalf("dialog open = %v after %v, want %v", open, tc.keys, tc.ignored)
			}
			// The plans of a batch run together: which starts first is
			// not fixed.
			if got := slices.Sorted(slices.Values(k.runs())); !slices.Equal(got, slices.Sorted(slices.Values(tc.ran))) {
				t.Errorf("ran %v, want %v", got, tc.ran)
			}
			if tc.ran != nil {
				for _, p := range plans {
					if p.Grace != tc.grace {
						t.Errorf("plan %s ran with grace %v, want %v (%s)", p.Target, p.Grace, tc.grace, p.Strategy())
					}
				}
			}
			if tc.ran == nil && !tc.ignored && m.status != "cancelled: nothing was signalled" {
				t.Errorf("status %q after cancelling", m.status)
			}
		})
	}
}

func sel(id string) func(*testing.T, *Model) {
	return func(t *testing.T, m *Model) { cursorTo(t, m, rowKey{sandbox: sk(id)}) }
}

func tag(ids ...string) func(*testing.T, *Model) {
	return func(t *testing.T, m *Model) {
		for _, id := range ids {
			cursorTo(t, m, rowKey{sandbox: sk(id)})
			settle(m, keys(" ")...)
		}
	}
}

// spell turns s into key names for keys().
func spell(s string) []string {
	out := make([]string, 0, len(s))
	for _, r := range s {
		out = append(out, string(r))
	}
	return out
}

// TestSecondTeardownRefused starts a teardown that does not finish and
// checks that K on the same target (or a process inside it) is refused.
func TestSecondTeardownRefused(t *testing.T) {
	k := &fakeKiller{}
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, k)
	settle(m, size(120, 40), m.Init()())
	// Mark the pod's members busy, as a running batch does.
	sb := m.view.Sandbox(idShim)
	for _, mb := range sb.Members {
		m.busy[mb.ID()] = 7
	}
	for _, tc := range []struct {
		name   string
		target func(*testing.T, *Model)
	}{
		{"the sandbox", sel(idShim)},
		{"a process inside it", func(t *testing.T, m *Model) {
			m.expanded[sk(idShim)] = true
			m.rebuild()
			cursorTo(t, m, memberKey(m, idShim, 303))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.target(t, m)
			settle(m, keys("K")...)
			if m.mode == modeConfirm {
				t.Fatalf("a busy target opened a confirmation")
			}
			if want := "already being torn down"; !strings.Contains(m.status, want) {
				t.Errorf("status %q, want it to say %q", m.status, want)
			}
		})
	}
	if r := k.runs(); len(r) != 0 {
		t.Errorf("ran %v", r)
	}
}

// TestConfirmListsProcesses: the confirmation lists the processes it will
// signal, root first, up to the room there is and then "and N more"; as
// non-root it warns that other users' processes cannot be signalled.
func TestConfirmListsProcesses(t *testing.T) {
	var bigPod []*proc.Process
	for i := range 60 {
		bigPod = append(bigPod, pr(1000+i, 302, time.Minute, "nginx: worker process", cg("/kubepods/"+idShim)))
	}
	for _, tc := range []struct {
		name     string
		euid     int
		h        int
		view     *model.View
		want     []string
		dontWant []string
	}{
		{"root, room for all", 0, 60, fleetViews(1)[0], []string{"processes  300 containerd-shim", "302 nginx"}, []string{"and ", "not root"}},
		{"root, little room", 0, 30, rebuilt(nil, 0, nil, bigPod...), []string{"processes  300 containerd-shim", "… and ", "more"}, []string{"not root"}},
		{"not root", 1000, 60, rebuilt(nil, 0, nil, bigPod...), []string{"not root: processes of other users cannot be signalled"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestModel(t, &fakeSource{views: []*model.View{tc.view}}, &fakeKiller{}, func(o *Options) { o.EUID = &tc.euid })
			settle(m, size(120, tc.h), m.Init()())
			sel(idShim)(t, m)
			settle(m, keys("K")...)
			v := m.View()
			for _, w := range tc.want {
				if !strings.Contains(v, w) {
					t.Errorf("dialog lacks %q:\n%s", w, v)
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(v, w) {
					t.Errorf("dialog has %q:\n%s", w, v)
				}
			}
		})
	}
}

// TestNoKeyActsWhileTooSmall: at 20×5 the screen says only "terminal too
// small", so K then y (or a confirmation opened at a good size and then
// shrunk away) tears nothing down; quit and help still act, and at the
// smallest size the screen draws, the confirmation shows its question and
// both buttons before y is taken.
func TestNoKeyActsWhileTooSmall(t *testing.T) {
	t.Run("K then y at 20x5", func(t *testing.T) {
		k := &fakeKiller{}
		m := newTestModel(t, &fakeSource{views: fleetViews(1)}, k)
		settle(m, size(20, 5), m.Init()())
		sel(idOrphan)(t, m)
		settle(m, keys("K", "y", "enter", "t", "y")...)
		if m.mode == modeConfirm || len(k.runs()) > 0 {
			t.Fatalf("mode %v, ran %v: a key acted on a screen that shows nothing", m.mode, k.runs())
		}
		settle(m, keys("?")...)
		if !m.help.ShowAll {
			t.Error("? does not act while the window is too small")
		}
		if cmd := m.key(keyMsg("q")); cmd == nil {
			t.Error("q does not quit while the window is too small")
		}
	})
	t.Run("shrunk under an open confirmation", func(t *testing.T) {
		k := &fakeKiller{}
		m := newTestModel(t, &fakeSource{views: fleetViews(1)}, k)
		settle(m, size(120, 40), m.Init()())
		sel(idOrphan)(t, m)
		settle(m, keys("K")...)
		if m.mode != modeConfirm {
			t.Fatal("K did not open the confirmation")
		}
		settle(m, size(20, 5))
		settle(m, keys("y", "tab", "enter")...)
		if len(k.runs()) > 0 {
			t.Fatalf("ran %v from a confirmation nobody could see", k.runs())
		}
		settle(m, size(minWidth, minHeight))
		view := m.View()
		for _, want := range []string{"Tear down sandbox " + idOrphan, "Cancel", "Tear down"} {
			if !strings.Contains(view, want) {
				t.Errorf("at %d×%d the confirmation lacks %q:\n%s", minWidth, minHeight, want, view)
			}
		}
		settle(m, keys("y")...)
		if got := k.runs(); !slices.Equal(got, []string{idOrphan}) {
			t.Errorf("ran %v once the confirmation was drawn, want %s", got, idOrphan)
		}
	})
}
