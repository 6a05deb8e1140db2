package ui

import (
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/model"
)

// TestSortAsAPersonReads: the ID order is namespace, then ID, ignoring
// case; a reverse does not carry over to the next order; every order
// marks its column with an arrow; F6 opens a menu of the orders.
// TestCompareFoldedIsComparingLowered checks the name order against its
// definition, strings.Compare of strings.ToLower, on names that are ASCII,
// not ASCII, of runes whose lower case encodes shorter or longer, prefixes
// of each other, and not UTF-8 at all.
func TestCompareFoldedIsComparingLowered(t *testing.T) {
	names := []string{"", "a", "A", "ab", "aB", "Ab", "b", "abc", "ABD", "ä", "Ä", "äb", "z",
		"İ", "i", "ı", "K", "k", "\u212a", "ß", "ẞ", "\xff", "\xffa", "a\xff", "\ufffd", "\xc3", "\xc3\xa4", "Σ", "σ", "ς", "日本", "日"}
	for _, a := range names {
		for _, b := range names {
			want := strings.Compare(strings.ToLower(a), strings.ToLower(b))
			if got := compareFolded(a, b); got != want {
				t.Errorf("compareFolded(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestSortAsAPersonReads(t *testing.T) {
	sbs := []*model.Sandbox{
		{ID: "b9df", Namespace: "moby"}, {ID: "C5dDMtgT9123"}, {ID: "a1", Namespace: "moby"},
		{ID: "c4aa"}, {ID: "09f6", Namespace: "default"},
	}
	slices.SortFunc(sbs, compareNames)
	var got []string
	for _, sb := range sbs {
		got = append(got, sb.Name())
	}
	if want := "c4aa C5dDMtgT9123 default/09f6 moby/a1 moby/b9df"; strings.Join(got, " ") != want {
		t.Errorf("ID order %v, want %s", got, want)
	}

	m := newTestModel(t, &fakeSource{views: fleetViews(2)}, &fakeKiller{})
	settle(m, size(120, 30), m.Init()())
	for k := range numSortKeys {
		m.sort = k
		m.rebuild()
		if h := m.table.header(); !strings.ContainsAny(h, "▲▼") {
			t.Errorf("sorted by %s, the titles carry no arrow: %q", k, h)
		}
	}
	m.sort = sortID
	m.rebuild()
	settle(m, keys("I", "s")...)
	if m.reverse {
		t.Error("the reverse of the ID order carried over to the CPU order")
	}
	settle(m, keys("f6")...)
	if m.mode != modeSortMenu || !strings.Contains(ansi.Strip(m.View()), "Sort by") {
		t.Fatalf("F6 did not open the sort menu:\n%s", m.View())
	}
	for m.sortPick != sortTrouble {
		settle(m, keys("down")...)
	}
	settle(m, keys("enter")...)
	if m.mode != modeNormal || m.sort != sortTrouble || !strings.Contains(m.table.header(), "BADGES/COMMAND▼") {
		t.Errorf("picking trouble: mode %d, sort %s, header %q", m.mode, m.sort, m.table.header())
	}
}

// TestRowsCountZombies: a sandbox row says how many zombies it holds.
func TestRowsCountZombies(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(120, 30), m.Init()())
	if l := ansi.Strip(lineWith(t, m.View(), "7d1e2c3a4b5c6 ")); !strings.Contains(l, "[zombie] 1") {
		t.Errorf("the row of a sandbox with a zombie: %q", l)
	}
}
