package ui

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"
)

// TestScreensAtThreeSizes pins the five screens an on-call engineer
// meets — the list, the detail pane scrolled, the key help, a confirmation
// of several targets and the teardown log — at 80×24, 120×40 and 220×60.
// Each must hold its substrings, so that a bad -update is caught, and no
// line may be wider than the window.
func TestScreensAtThreeSizes(t *testing.T) {
	screens := []struct {
		name  string
		steps func(t *testing.T, m *Model)
		want  []string
	}{
		{"list", press("e"), []string{"? more keys • q F10 quit", "BADGES/COMMAND", "[zombie] 1", "└─ nginx: master"}},
		{"detail_scrolled", func(t *testing.T, m *Model) {
			cursorTo(t, m, rowKey{sandbox: sk(idOrphan)})
			settle(m, keys("d", "tab", "G")...)
		}, []string{"sandbox " + idOrphan, "captures   id=" + idOrphan, "esc close pane"}},
		{"help", press("?"), []string{"expand/collapse all", "fewer keys", "filter terms"}},
		{"confirm_targets", func(t *testing.T, m *Model) {
			tag(idVM0, idOrphan, idShim, idPaused)(t, m)
			settle(m, keys("K")...)
		}, []string{"Tear down 4 targets (12 processes)?", idVM0 + "  vm0  3 processes (1 zombie)", `Type "yes" to confirm`}},
		{"teardown_log", func(t *testing.T, m *Model) {
			cursorTo(t, m, rowKey{sandbox: sk(idPaused)})
			settle(m, keys("K", "t", "y")...)
		}, []string{"[OK]", "teardown finished", "finished: 1 target: 2 killed"}},
	}
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {220, 60}} {
		for _, sc := range screens {
			t.Run(fmt.Sprintf("%s_%dx%d", sc.name, sz[0], sz[1]), func(t *testing.T) {
				pkg, err := os.Getwd()
				if err != nil {
					t.Fatal(err)
				}
				t.Chdir(t.TempDir())
				m := newTestModel(t, &fakeSource{views: fleetViews(2)}, &fakeKiller{audit: "audit.jsonl"})
				settle(m, size(sz[0], sz[1]), m.Init()())
				settle(m, keys("r")...)
				sc.steps(t, m)
				out := m.View()
				for _, w := range sc.want {
					if !strings.Contains(out, w) {
						t.Errorf("view lacks %q:\n%s", w, out)
					}
				}
				lines := strings.Split(out, "\n")
				if len(lines) > sz[1] {
					t.Errorf("view is %d lines on a %d-line terminal", len(lines), sz[1])
				}
				for _, l := range lines {
					if w := len([]rune(l)); w > sz[0] {
						t.Errorf("a line is %d wide on a %d-column terminal: %q", w, sz[0], l)
					}
				}
				if err := os.Chdir(pkg); err != nil {
					t.Fatal(err)
				}
				golden.RequireEqual(t, []byte(out))
			})
		}
	}
}

// onePlural finds a count of one followed by a plural: "1 processes",
// "1 survivors", "all 1 exited".
var onePlural = regexp.MustCompile(`(^|[^0-9.:/])(1 [a-z]+(es|s)\b|all 1\b)`)

// notPlural are words ending in s that follow a 1 without being plural.
var notPlural = regexp.MustCompile(`^1 (process|is|was|has|this|its|less|status|alias|address|class|pass|press|access|focus|bus|gas|plus|minus)$`)

// TestEveryCountThroughTheHelper: no golden screen says "1 …s": each count
// went through words.Count.
func TestEveryCountThroughTheHelper(t *testing.T) {
	files, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var walk func(dir string)
	walk = func(dir string) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			p := dir + "/" + e.Name()
			if e.IsDir() {
				walk(p)
				continue
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			n++
			for _, m := range onePlural.FindAllStringSubmatch(string(b), -1) {
				if !notPlural.MatchString(m[2]) {
					t.Errorf("%s: %q", p, m[2])
				}
			}
		}
	}
	for _, f := range files {
		if f.IsDir() {
			walk("testdata/" + f.Name())
		}
	}
	if n < 20 {
		t.Fatalf("read %d golden files: the screens moved?", n)
	}
}
