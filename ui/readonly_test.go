package ui

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
)

// allKeys lists every key of every binding in the key map, enabled or
// not, found by reflection so that a binding added later is covered too.
// The quit keys, which end the program, come apart.
func allKeys(t *testing.T) (keys, quit []string) {
	t.Helper()
	km := reflect.ValueOf(DefaultKeyMap())
	for i := range km.NumField() {
		b, ok := km.Field(i).Interface().(key.Binding)
		if !ok {
			t.Fatalf("KeyMap field %s is not a key.Binding", km.Type().Field(i).Name)
		}
		if name := km.Type().Field(i).Name; name == "Quit" || name == "ForceQuit" {
			quit = append(quit, b.Keys()...)
		} else {
			keys = append(keys, b.Keys()...)
		}
	}
	for _, k := range append(keys, quit...) {
		keyMsg(k) // panics on a key the test cannot send
	}
	return keys, quit
}

// TestReadOnlyCannotKill proves the read-only TUI has no path to a signal:
// its killer is nil even when one is passed, the kill keys are disabled
// and out of the help, and every bound key, pressed on every kind of row,
// reaches no Killer method.
func TestReadOnlyCannotKill(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"nil killer", Options{}},
		{"read-only drops a given killer", Options{ReadOnly: true, Killer: failKiller{t}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.Source, o.Interval, o.LookupUser = &fakeSource{views: fleetViews(2)}, time.Hour, testLookup
			m := New(o)
			m.tick = noTick
			t.Cleanup(func() { _ = m.Shutdown() })
			if !m.ReadOnly() || m.killer != nil {
				t.Fatalf("ReadOnly() = %v, killer = %v; want a nil killer", m.ReadOnly(), m.killer)
			}
			for _, b := range []key.Binding{m.keys.Kill, m.keys.Tag, m.keys.Untag} {
				if b.Enabled() {
					t.Errorf("binding %v is enabled in read-only mode", b.Keys())
				}
			}
			settle(m, size(120, 40), m.Init()())
			help := m.helpView()
			settle(m, keys("?")...)
			help += m.helpView()
			for _, word := range []string{"kill", "tag"} {
				if strings.Contains(help, word) {
					t.Errorf("help offers %q in read-only mode:\n%s", word, help)
				}
			}
			settle(m, keys("?", "e", "a")...)
			cursorTo(t, m, hostKey)
			settle(m, keys("l")...)

			all, _ := allKeys(t)
			for _, row := range []rowKey{{sandbox: sk(idOrphan)}, memberKey(m, idShim, 303), {sandbox: hostGroup, id: m.view.Snapshot.Proc(502).ID()}, hostKey} {
				for _, k := range all {
					cursorTo(t, m, rowForKey(t, m, row))
					settle(m, keyMsg(k))
					if m.mode == modeConfirm || m.confirm != nil {
						t.Fatalf("key %q on %+v opened a kill confirmation", k, row)
					}
					settle(m, keys("esc", "esc")...)
				}
				settle(m, keys("K")...)
				if m.status != "read-only mode: killing is disabled" {
					t.Errorf("K on %+v: status %q, want the read-only notice", row, m.status)
				}
			}
			if len(m.tags) != 0 || m.panel.open || len(m.batches) != 0 {
				t.Errorf("read-only model has tags %v, panel %v, batches %d", m.tags, m.panel.open, len(m.batches))
			}
		})
	}
}

// rowForKey re-finds a row after keys may have collapsed its group.
func rowForKey(t *testing.T, m *Model, k rowKey) rowKey {
	t.Helper()
	if find(m.table.rows, k) < 0 {
		m.expanded[k.sandbox] = true
		m.showHost = true
		m.setFilter("")
	}
	return k
}

// TestReadOnlyProgram runs the read-only program end to end with a nil
// killer and sends it every bound key, then checks it quit cleanly having
// never left read-only mode.
func TestReadOnlyProgram(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(2)}, nil)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	waitFor(t, tm, "READ-ONLY")
	all, _ := allKeys(t)
	for _, k := range all {
		tm.Send(keyMsg(k))
		tm.Send(keyMsg("esc"))
	}
	tm.Send(keyMsg("K"))
	waitFor(t, tm, "read-only mode: killing is disabled")
	tm.Send(keyMsg("q"))
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if !fm.ReadOnly() || fm.mode == modeConfirm || len(fm.batches) != 0 {
		t.Errorf("read-only program ended with killer %v, mode %v, %d batches", fm.killer, fm.mode, len(fm.batches))
	}
}

// waitFor waits until the program has drawn every one of want. They are
// looked for in one pass over the output: teatest hands each byte to one
// WaitFor only, and things drawn in the same frame would be lost to a
// second call.
func waitFor(t *testing.T, tm *teatest.TestModel, want ...string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				return false
			}
		}
		return true
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

var _ tea.Model = (*Model)(nil)
