package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

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
	root := filepath.Join("..", "..", "proc", "testdata", "host")
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
