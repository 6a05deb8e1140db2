package main

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc/proctest"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/ui/theme"
)

// TestListWidths: piped, `list --tree` pads no line (the table pads every
// cell, the last column's padding made each line as long as the longest
// argv); on a terminal each line fits its width, argv cut with "…";
// --wide (width 0) prints whole lines.
func TestListWidths(t *testing.T) {
	root := proctest.Fixture(t, filepath.Join("..", "..", "proc", "testdata", "host"))
	code, out, errOut := sandtop(t, "list", "--all", "--tree", "--proc-root", filepath.Join(root, "proc"), "--sys-root", filepath.Join(root, "sys"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	longest := 0
	for _, l := range lines {
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing spaces: %q", l)
		}
		longest = max(longest, len(l))
	}

	sc, err := proc.NewScanner(proc.Options{ProcRoot: filepath.Join(root, "proc"), SysRoot: filepath.Join(root, "sys")})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	snap, err := sc.Scan()
	if err != nil {
		t.Fatal(err)
	}
	v := model.Build(snap, model.Effective(nil, true), nil)
	r := lipgloss.NewRenderer(&bytes.Buffer{})
	r.SetColorProfile(termenv.ANSI256) // a terminal, with colour
	for _, width := range []int{60, 80} {
		var b bytes.Buffer
		writeList(&b, theme.New(r), v, &listOpts{tree: true, all: true, width: width})
		cut := false
		for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			if w := ansi.StringWidth(l); w > width {
				t.Errorf("width %d: a line of %d cells: %q", width, w, l)
			}
			cut = cut || strings.Contains(l, "…")
		}
		if !cut && width < longest {
			t.Errorf("width %d: no line was cut with …", width)
		}
	}
	var wide bytes.Buffer
	writeList(&wide, theme.New(r), v, &listOpts{tree: true, all: true})
	if !strings.Contains(ansi.Strip(wide.String()), "/usr/bin/runner --id box1") {
		t.Errorf("--wide cut a line:\n%s", wide.String())
	}
}

// TestPlainTableIsTheTable: without colour the list lays its table out
// itself (plainTable), and it must print what lipgloss's table prints, for
// any rows; a cell it cannot measure (not printable ASCII) is left to the
// table.
func TestPlainTableIsTheTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	headers := []string{"ID", "RUNTIME", "PROCS", "ROOT PID", "CPU", "RSS", "AGE", "BADGES"}
	numeric := func(col int) bool { return col >= 2 && col <= 6 }
	cellOf := func() string {
		b := make([]byte, rng.IntN(4)*rng.IntN(12))
		for i := range b {
			b[i] = byte(' ' + rng.IntN('~'-' '+1))
		}
		return string(b)
	}
	r := lipgloss.NewRenderer(&bytes.Buffer{})
	r.SetColorProfile(termenv.Ascii)
	for n := range 200 {
		var rows [][]string
		for range rng.IntN(12) {
			row := make([]string, len(headers))
			for c := range row {
				row[c] = cellOf()
			}
			rows = append(rows, row)
		}
		got, ok := plainTable(headers, rows, numeric)
		if !ok {
			t.Fatalf("case %d: printable ASCII refused", n)
		}
		want := tableLines(r, headers, rows, numeric)
		trim := func(ls []string) string {
			out := make([]string, len(ls))
			for i, l := range ls {
				out[i] = strings.TrimRight(l, " ")
			}
			return strings.Join(out, "\n")
		}
		if g, w := trim(got), trim(want); g != w {
			t.Fatalf("case %d:\n--- plainTable\n%s\n--- table\n%s", n, g, w)
		}
	}
	for _, odd := range []string{"wide 世界", "tab\there", "new\nline", "\x1b[31mred"} {
		if _, ok := plainTable(headers, [][]string{{odd, "", "", "", "", "", "", ""}}, numeric); ok {
			t.Errorf("plainTable took %q", odd)
		}
	}
}
