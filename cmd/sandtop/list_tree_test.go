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
	"github.com/sandtop/sandtop/proc/proctest"
	"github.com/sandtop/sandtop/ui/theme"
)

// TestListTreeGivesTheCommandTheWidth: on an 80-column terminal `list
// --tree` starts each process's command near the left margin, not after
// the sandbox rows' columns, so the command is read, not "bwra…".
func TestListTreeGivesTheCommandTheWidth(t *testing.T) {
	root := proctest.Fixture(t, filepath.Join("..", "..", "proc", "testdata", "host"))
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
	r.SetColorProfile(termenv.ANSI256)
	var b bytes.Buffer
	writeList(&b, theme.New(r), v, &listOpts{tree: true, all: true, width: 80})
	out := ansi.Strip(b.String())
	var procs int
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "/usr/bin/"); i >= 0 {
			procs++
			if i > 40 {
				t.Errorf("a command starts at column %d: %q", i, l)
			}
		}
	}
	if procs < 2 || !strings.Contains(out, "/usr/bin/runner --id box1") {
		t.Errorf("the runner's command is not read whole at 80 columns:\n%s", out)
	}
	t.Log("\n" + out)
}
