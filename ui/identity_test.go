package ui

import (
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// rebuilt returns the fleet's next view with procs added (or replacing a
// pid) and drop removed, built on prev as the real source does.
func rebuilt(prev *model.View, at time.Duration, drop []int, procs ...*proc.Process) *model.View {
	all := fleetProcs(procs...)
	kept := all[:0]
	for _, p := range all {
		gone := false
		for _, d := range drop {
			gone = gone || p.PID == d
		}
		if !gone {
			kept = append(kept, p)
		}
	}
	return model.NewBuilder(testRules).Build(snapshot(at, kept...), prev)
}

// TestCursorFollowsIdentity refreshes with views that insert, reorder and
// remove rows, and checks that the cursor (and the tags and expansion)
// stay on the same sandbox or process, never on the same index.
func TestCursorFollowsIdentity(t *testing.T) {
	// A new sandbox whose ID sorts first, so every row below it moves down.
	newcomer := pr(600, 1, time.Second, "/usr/bin/containerd-shim-runc-v2 -id 0000aaaa11112222 -address "+shimSocket)
	// A new process in the pod, born before the worker the cursor is on.
	sibling := pr(305, 302, time.Second, "nginx: worker process", cg("/kubepods/"+idShim), uid(101))

	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, m *Model) // puts the cursor somewhere
		next  func(v *model.View) *model.View
		sort  bool // sort by CPU first, so the newcomer's CPU reorders
		want  func(m *Model) rowKey
		// moves says the row's index changes, so staying on it proves the
		// cursor followed the identity and not the index.
		moves bool
	}{
		{
			name:  "sandbox row, a sandbox inserted above",
			setup: func(t *testing.T, m *Model) { cursorTo(t, m, rowKey{sandbox: sk(idShim)}) },
			next:  func(v *model.View) *model.View { return rebuilt(v, 2*time.Second, nil, newcomer) },
			want:  func(*Model) rowKey { return rowKey{sandbox: sk(idShim)} },
			moves: true,
		},
		{
			name: "sandbox row, reordered by CPU",
			sort: true,
			setup: func(t *testing.T, m *Model) {
				cursorTo(t, m, rowKey{sandbox: sk(idOrphan)})
			},
			next: func(v *model.View) *model.View {
				// The orphan burns 300 ticks in a second and jumps to the top.
				return rebuilt(v, 2*time.Second, nil, pr(210, 1, 26*time.Hour, "/usr/bin/firecracker --api-sock /run/vm0/sock/"+idOrphan+"/api.sock", ticks(90_300)))
			},
			want:  func(*Model) rowKey { return rowKey{sandbox: sk(idOrphan)} },
			moves: true,
		},
		{
			name: "process row, a process inserted above",
			setup: func(t *testing.T, m *Model) {
				settle(m, keys("e")...)
				cursorTo(t, m, memberKey(m, idShim, 304))
			},
			next:  func(v *model.View) *model.View { return rebuilt(v, 2*time.Second, nil, sibling, newcomer) },
			want:  func(m *Model) rowKey { return memberKey(m, idShim, 304) },
			moves: true,
		},
		{
			name: "process gone: its sandbox",
			setup: func(t *testing.T, m *Model) {
				settle(m, keys("e")...)
				cursorTo(t, m, memberKey(m, idShim, 304))
			},
			next: func(v *model.View) *model.View { return rebuilt(v, 2*time.Second, []int{304}, newcomer) },
			want: func(*Model) rowKey { return rowKey{sandbox: sk(idShim)} },
		},
		{
			name: "pid reused by another process: not the same row",
			setup: func(t *testing.T, m *Model) {
				settle(m, keys("e")...)
				cursorTo(t, m, memberKey(m, idShim, 304))
			},
			next: func(v *model.View) *model.View {
				return rebuilt(v, 2*time.Second, nil, pr(304, 302, time.Second, "nginx: worker process", cg("/kubepods/"+idShim)))
			},
			want: func(*Model) rowKey { return rowKey{sandbox: sk(idShim)} },
		},
		{
			name:  "sandbox gone: the nearest row",
			setup: func(t *testing.T, m *Model) { cursorTo(t, m, rowKey{sandbox: sk(idOrphan)}) },
			next:  func(v *model.View) *model.View { return rebuilt(v, 2*time.Second, []int{210, 211}) },
			want:  func(*Model) rowKey { return rowKey{sandbox: sk(idShim)} },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views := fleetViews(2)
			src := &fakeSource{views: views}
			m := newTestModel(t, src, &fakeKiller{})
			settle(m, size(120, 40), m.Init()())
			settle(m, keys("r")...)
			if tc.sort {
				settle(m, keys("s")...) // cpu
			}
			tc.setup(t, m)
			m.expanded[sk(idVM0)] = true // expansion must follow the ID too
			m.rebuild()
			tagged := rowKey{sandbox: sk(idPaused)}
			m.tags[tagged] = true

			before := m.table.cursor
			src.push(tc.next(views[1]))
			settle(m, keys("r")...)

			if got, want := selectedKey(m), tc.want(m); got != want {
				t.Errorf("cursor on %+v, want %+v", got, want)
			}
			if tc.moves && m.table.cursor == before {
				t.Errorf("the row stayed at index %d: the case proves nothing", before)
			}
			if i := find(m.table.rows, rowKey{sandbox: sk(idVM0)}); i < 0 || !m.table.rows[i].open {
				t.Errorf("sandbox %s lost its expansion", idVM0)
			}
			if !m.tags[tagged] {
				t.Errorf("tag on %s lost", idPaused)
			}
		})
	}
}

// TestConfirmHoldsTheList checks that a refresh during a confirmation
// does not change the list under it, and is shown once it closes.
func TestConfirmHoldsTheList(t *testing.T) {
	views := fleetViews(2)
	src := &fakeSource{views: views}
	m := newTestModel(t, src, &fakeKiller{})
	settle(m, size(120, 40), m.Init()())
	cursorTo(t, m, rowKey{sandbox: sk(idShim)})
	settle(m, keys("K")...)
	if m.mode != modeConfirm {
		t.Fatalf("K did not open the confirmation")
	}
	before := m.view
	src.push(rebuilt(views[1], 2*time.Second, []int{300, 301, 302, 303, 304}))
	settle(m, tickMsg{gen: m.tickGen})
	if src.calls != 2 {
		t.Fatalf("the tick did not scan (%d scans)", src.calls)
	}
	if m.view != before || find(m.table.rows, rowKey{sandbox: sk(idShim)}) < 0 {
		t.Errorf("the list changed while the confirmation was open")
	}
	if !m.headerState().held {
		t.Errorf("the header does not say the list is held")
	}
	settle(m, keys("esc")...)
	if m.mode != modeNormal || m.view == before {
		t.Fatalf("cancel did not show the held scan")
	}
	if find(m.table.rows, rowKey{sandbox: sk(idShim)}) >= 0 {
		t.Errorf("the gone sandbox is still listed after the held scan was applied")
	}
}
