package main

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
	"github.com/sandtop/sandtop/proc/proctest"
)

// readDoc returns one page of the documentation: "README.md" at the top of
// the checkout, any other name under docs/.
func readDoc(t *testing.T, name string) []byte {
	t.Helper()
	path := filepath.Join(testRoot, "..", "..", "docs", name)
	if name == "README.md" {
		path = filepath.Join(testRoot, "..", "..", name)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// docPages lists README.md and every page under docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(testRoot, "..", "..", "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages under docs/: %v", err)
	}
	names := []string{"README.md"}
	for _, p := range pages {
		names = append(names, filepath.Base(p))
	}
	return names
}

// readmeCommands returns the command lines of the ```sh blocks of README.md
// and of every page under docs/, without their comments.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	var b []byte
	for _, page := range docPages(t) {
		b = append(append(b, readDoc(t, page)...), '\n')
	}
	var cmds []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in:
			if i := strings.Index(line, " # "); i >= 0 {
				line = line[:i]
			}
			if strings.HasPrefix(line, "#") {
				continue // a note for the reader, such as a step outside sandtop
			}
			if line = strings.TrimSpace(line); line != "" {
				cmds = append(cmds, line)
			}
		}
	}
	return cmds
}

// TestReadmeCommands runs every command README.md shows, so the README
// cannot rot: sandtop commands in-process against a real fleet (each <ID>
// and <PID> is a sandbox of it), make targets with -n, the rest as they
// are. Commands that need a terminal are checked to say so.
func TestReadmeCommands(t *testing.T) {
	cmds := readmeCommands(t)
	if len(cmds) < 15 {
		t.Fatalf("found only %d commands in README.md", len(cmds))
	}
	var ids []string
	var pids []int
	if os.Geteuid() == 0 {
		var specs []fleet.SandboxSpec
		for range 6 {
			specs = append(specs, fleet.SandboxSpec{Runtime: fleet.Containerd})
		}
		m := fleettest.Start(t, fleet.Spec{Sandboxes: specs}).Manifest()
		for _, sb := range m.Sandboxes {
			ids = append(ids, sb.ID)
			pids = append(pids, sb.Root().PID)
		}
	}
	// The kill lines must not write to the host's real audit log.
	t.Setenv("SANDTOP_AUDIT_LOG", filepath.Join(t.TempDir(), "audit.jsonl"))
	// `rules --check rules.toml` checks the README's own home-grown example.
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("rules.toml", []byte(homeGrownRule(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs(filepath.Join(testRoot, "..", ".."))

	for _, line := range cmds {
		t.Run(line, func(t *testing.T) {
			fields := strings.Fields(line)
			// Leading NAME=value words set the command's environment.
			var env []string
			for len(fields) > 1 && strings.Contains(fields[0], "=") {
				env, fields = append(env, fields[0]), fields[1:]
			}
			switch fields[0] {
			case "make":
				cmd := exec.Command("make", "-n", fields[1])
				cmd.Dir = root
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("make -n %s: %v\n%s", fields[1], err, out)
				}
			case "go":
				runGo(t, root, env, fields[1:])
			case "sandtop":
				if env != nil {
					t.Fatalf("README sets an environment for sandtop, which this test does not: %q", line)
				}
				runReadmeSandtop(t, fields[1:], &ids, &pids)
			default:
				t.Fatalf("README shows a command this test does not know how to run: %q", line)
			}
		})
	}
}

// testRoot is this package's directory, captured before the test changes
// into a temporary one.
var testRoot, _ = os.Getwd()

func runGo(t *testing.T, root string, env, args []string) {
	t.Helper()
	switch {
	case args[0] == "install":
		bin := t.TempDir()
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(append(os.Environ(), "GOBIN="+bin), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go %v: %v\n%s", args, err, out)
			return
		}
		// The README says the install builds a static binary: no
		// program interpreter (the dynamic loader) to run it.
		f, err := elf.Open(filepath.Join(bin, filepath.Base(args[len(args)-1])))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("go %v with %v built a dynamically linked binary", args, env)
			}
		}
	case args[0] == "run" && args[1] == "./cmd/sandsim":
		proctest.RequireRoot(t) // a fleet with cgroups
		// sandsim runs its fleet until its stdin closes: here at once.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = root
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "sandboxes") {
			t.Errorf("go %v: %v\n%s", args, err, out)
		}
	default:
		t.Fatalf("unknown go command %v", args)
	}
}

func runReadmeSandtop(t *testing.T, args []string, ids *[]string, pids *[]int) {
	t.Helper()
	var expect []string // what stdout must contain
	for i, a := range args {
		switch a {
		case "<ID>", "<PID>":
			if len(*ids) == 0 {
				proctest.SkipMissing(t, "needs a fleet (root)")
			}
			if a == "<ID>" {
				args[i] = (*ids)[0]
			} else {
				args[i] = strconv.Itoa((*pids)[0])
			}
			*ids, *pids = (*ids)[1:], (*pids)[1:]
		case ">":
			args = args[:i] // the redirection: stdout is checked below
			expect = append(expect, "sandtop")
		}
	}
	// A recording shown to last hours is made in seconds, long enough for
	// the README's --at +2s.
	if len(args) > 0 && args[0] == "record" {
		if i := slices.Index(args, "--duration"); i >= 0 && i+1 < len(args) {
			args[i+1] = "3s"
		}
	}
	if len(args) > 0 && args[0] == "serve" {
		runReadmeServe(t, args[1:])
		return
	}
	code, out, errOut := sandtop(t, args...)
	want := 0
	// Commands that need a terminal must say so; the live screen itself
	// is tested in ui/ and by TestDemoLeavesNothingBehind.
	interactive := len(args) == 0 || args[0] == "watch" || args[0] == "demo" || args[0] == "replay" || args[0] == "--record" ||
		(args[0] == "kill" && !strings.Contains(strings.Join(args, " "), "--force") && !strings.Contains(strings.Join(args, " "), "--dry-run"))
	if interactive {
		want = exitUsage
		expect = nil
		if !strings.Contains(errOut, "terminal") {
			t.Errorf("stderr %q does not say a terminal is needed", errOut)
		}
	}
	if code != want {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, out, errOut)
	}
	for _, e := range expect {
		if !strings.Contains(out, e) {
			t.Errorf("stdout lacks %q:\n%s", e, out)
		}
	}
}

// homeGrownRule is the README's home-grown runtime example: the TOML block
// that follows "A home-grown runtime".
func homeGrownRule(t *testing.T) string {
	t.Helper()
	s := string(readDoc(t, "rules.md"))
	i := strings.Index(s, "**A home-grown runtime.**")
	if i < 0 {
		t.Fatal("README has no home-grown runtime example")
	}
	s = s[i:]
	start := strings.Index(s, "```toml\n")
	end := strings.Index(s[start+8:], "```")
	if start < 0 || end < 0 {
		t.Fatal("no toml block after the home-grown runtime heading")
	}
	return s[start+8 : start+8+end]
}

// TestReadmeFilterTerms checks that docs/screen.md's filter table shows every term
// the filter language has, with the same words as the `?` help.
func TestReadmeFilterTerms(t *testing.T) {
	b := readDoc(t, "screen.md")
	for _, l := range query.Syntax {
		if row := "| `" + l[0] + "` |"; !strings.Contains(string(b), row) {
			t.Errorf("README's filter table has no row %q", row)
		}
	}
	_, row, _ := strings.Cut(string(b), "| `badge:NAME` |")
	row, _, _ = strings.Cut(row, "\n")
	for _, bd := range model.Badges {
		if !strings.Contains(row, string(bd)) {
			t.Errorf("README's badge: row does not name badge %q: %q", bd, row)
		}
	}
}
