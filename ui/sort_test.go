package ui

import (
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/sandtop/sandtop/model"
)

func sandboxOrder(m *Model) []string {
	var out []string
	for _, r := range m.table.rows {
		switch r.kind {
		case rowSandbox:
			out = append(out, r.sb.ID)
		case rowHost:
			out = append(out, "(host)")
		}
	}
	return out
}

// TestSortOrders: every order has an arrow on its column, I reverses it,
// trouble puts orphans, then paused, then zombies on top, runtime groups
// by runtime, and the host group sorts with the rest.
func TestSortOrders(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(2)}, &fakeKiller{})
	settle(m, size(160, 40), m.Init()())
	settle(m, keys("r")...)
	settle(m, m.refreshNow()())
	settle(m, keys("a")...)
	titles := map[sortKey]string{sortID: "ID/PID▲", sortCPU: "▼CPU%", sortMem: "▼MEM", sortAge: "▼AGE",
		sortProcs: "▼PROCS", sortRuntime: "RUNTIME▲", sortTrouble: "BADGES/COMMAND▼",
		sortIO: "▼IO", sortPressure: "▼PRESSURE"}
	for k := range numSortKeys {
		if m.sort != k {
			t.Fatalf("sort %v after %d presses of s", m.sort, k)
		}
		if head := m.table.header(); !strings.Contains(head, titles[k]) {
			t.Errorf("sort %v: header %q has no %q", k, head, titles[k])
		}
		order := sandboxOrder(m)
		settle(m, keys("I")...)
		rev := sandboxOrder(m)
		if len(order) > 1 && slices.Equal(order, rev) {
			t.Errorf("sort %v: I did not reverse %v", k, order)
		}
		settle(m, keys("I")...)
		switch k {
		case sortTrouble:
			var ranks []int
			for _, id := range order {
				if id != "(host)" {
					ranks = append(ranks, trouble(m.view.Sandboxes[slices.IndexFunc(m.view.Sandboxes, func(sb *model.Sandbox) bool { return sb.ID == id })]))
				}
			}
			if !slices.IsSortedFunc(ranks, func(a, b int) int { return b - a }) || ranks[0] < 4 {
				t.Errorf("trouble order %v (ranks %v): orphans first", order, ranks)
			}
		case sortID:
			if order[len(order)-1] != "(host)" {
				t.Errorf("sorted by ID the host group is not last: %v", order)
			}
		case sortProcs:
			if order[0] != "(host)" {
				// The fixture's host group has more processes than any sandbox.
				t.Errorf("sorted by processes the host group is not first: %v", order)
			}
		}
		settle(m, keys("s")...)
	}
}

// TestMouse: a click selects a row, a click on a column title sorts by it
// (again: reversed), the wheel scrolls.
func TestMouse(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(160, 40), m.Init()())
	settle(m, keys("e")...)
	click := func(x, y int) {
		settle(m, tea.MouseMsg{X: x, Y: y, Button: tea.MouseButtonLeft, Action: tea.MouseActionPress},
			tea.MouseMsg{X: x, Y: y, Button: tea.MouseButtonLeft, Action: tea.MouseActionRelease})
	}
	click(10, headerHeight+1+3)
	if m.table.cursor != 3 {
		t.Errorf("click on the fourth row: cursor %d", m.table.cursor)
	}
	x := strings.Index(m.table.header(), "CPU%")
	click(x, headerHeight)
	if m.sort != sortCPU || m.reverse {
		t.Errorf("click on CPU%%: sort %v reverse %v", m.sort, m.reverse)
	}
	click(x, headerHeight)
	if m.sort != sortCPU || !m.reverse {
		t.Errorf("second click on CPU%%: sort %v reverse %v", m.sort, m.reverse)
	}
	before := m.table.cursor
	settle(m, tea.MouseMsg{X: 10, Y: 10, Button: tea.MouseButtonWheelDown, Action: tea.MouseActionPress})
	if m.table.cursor != before+wheelStep {
		t.Errorf("wheel down: cursor %d, want %d", m.table.cursor, before+wheelStep)
	}
}

// TestStickyHeaderAndMarkers: scrolled into a sandbox's processes, the
// first line names the sandbox; the header says how many rows are above
// and below the window.
func TestStickyHeaderAndMarkers(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(120, 16), m.Init()())
	settle(m, keys("e")...)
	// Down until the window starts inside a sandbox's processes.
	for range len(m.table.rows) {
		if m.table.rows[m.table.offset].kind == rowMember {
			break
		}
		settle(m, keys("j")...)
	}
	top := &m.table.rows[m.table.offset]
	if top.kind != rowMember {
		t.Fatalf("window starts at a %v row; the test wants it inside a sandbox", top.kind)
	}
	lines := strings.Split(m.table.view(m.rowCtx()), "\n")
	if !strings.Contains(lines[1], top.sb.ID[:12]) {
		t.Errorf("first line %q does not name its sandbox %s", lines[1], top.sb.ID)
	}
	if m.table.cursor == m.table.offset {
		t.Error("the cursor's row is hidden under the sticky header")
	}
	if h := m.View(); !strings.Contains(h, "↑") || !strings.Contains(h, "↓") {
		t.Errorf("no more-above/below markers:\n%s", h)
	}
}

// TestHeaderKeepsBadgeCountsNarrow: read-only in 78 columns, with every
// badge, the counts all show; the trouble badges no sandbox has do not.
func TestHeaderKeepsBadgeCountsNarrow(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, nil)
	settle(m, size(78, 24), m.Init()())
	head := strings.SplitN(m.View(), "\n", 2)[0]
	for _, b := range model.Badges {
		shown := strings.Contains(head, string(b)+"] ") || strings.Contains(head, string(b)+" ")
		if !alwaysCounted(b) {
			if shown {
				t.Errorf("header %q counts %s, which no sandbox has", head, b)
			}
			continue
		}
		if !shown {
			t.Errorf("header %q lacks the %s count", head, b)
		}
	}
	if strings.Contains(head, "…") {
		t.Errorf("header cut: %q", head)
	}
}

// TestWideTerminalShowsWholeIDs: at 250 columns the ID column shows whole
// IDs; at 120 the short ones.
func TestWideTerminalShowsWholeIDs(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(250, 30), m.Init()())
	if v := m.View(); !strings.Contains(v, idVM0+" ") {
		t.Errorf("250 columns: %s not shown whole:\n%s", idVM0, v)
	}
	settle(m, size(120, 30))
	if v := m.View(); strings.Contains(v, idVM0) {
		t.Errorf("120 columns: %s shown whole:\n%s", idVM0, v)
	}
}
