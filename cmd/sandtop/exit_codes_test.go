package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/proc/proctest"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestExitCodes runs one case of each line of the exit-code table of docs/teardown.md
// (the cases that need a fleet, a terminal or another user are in
// TestExitCodesLive).
func TestExitCodes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("[[rule]]\nname = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"version", []string{"--version"}, exitOK, ""},
		{"list", []string{"list", "--json"}, exitOK, ""},
		{"rules", []string{"rules"}, exitOK, ""},
		{"rules --check of a bad file", []string{"rules", "--check", bad}, exitFailure, "bad.toml"},
		{"rules --check of a missing file", []string{"rules", "--check", "/nonexistent.toml"}, exitFailure, "/nonexistent.toml"},
		{"unknown command", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"unknown subcommand argument", []string{"list", "extra"}, exitUsage, `unknown command "extra"`},
		{"unknown flag", []string{"list", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{"bad flag value", []string{"kill", "--grace", "soon", "x"}, exitUsage, "invalid argument"},
		{"missing --proc-root", []string{"list", "--proc-root", "/nonexistent"}, exitUsage, "--proc-root /nonexistent: no such file or directory"},
		{"missing --rules", []string{"list", "--rules", "/nonexistent.toml"}, exitUsage, "/nonexistent.toml"},
		// list loads its rules while it scans; the rules' error still wins.
		{"bad --rules", []string{"list", "--rules", bad}, exitUsage, "bad.toml"},
		{"bad --rules and --proc-root", []string{"list", "--rules", bad, "--proc-root", "/nonexistent"}, exitUsage, "bad.toml"},
		{"kill without target", []string{"kill"}, exitUsage, "needs a sandbox ID"},
		{"kill of an unknown ID", []string{"kill", "--force", "ffffdead00000000"}, exitUsage, "no sandbox ID starts with"},
		{"kill of an ID and a pid", []string{"kill", "--force", "--pid", "4242", "ffffdead"}, exitUsage, "not both"},
		{"kill without a terminal", []string{"kill", "ffffdead"}, exitUsage, ""},
		{"the live screen without a terminal", []string{}, exitUsage, "needs a terminal"},
		{"watch without a terminal", []string{"watch"}, exitUsage, "needs a terminal"},
		{"completion for an unknown shell", []string{"completion", "tcsh"}, exitUsage, `no completion for "tcsh": sandtop completes bash, fish, powershell, zsh`},
		{"completion without a shell", []string{"completion"}, exitUsage, "completion needs a shell"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := sandtop(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("sandtop %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.stderr)
			}
			if tc.name == "missing --proc-root" && strings.Count(errOut, "/nonexistent") != 1 {
				t.Errorf("the path is said %d times: %q", strings.Count(errOut, "/nonexistent"), errOut)
			}
		})
	}
}

// TestFlagHelpRendersAsMeant: pflag takes a `quoted` word in a flag's
// description for the name of its value ("--read-only sandtop watch"), so
// no description may hold a backquote, and each value name is a plain word.
func TestFlagHelpRendersAsMeant(t *testing.T) {
	root := newRootCmd()
	initCompletion(root)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: description has a backquote: %q", c.CommandPath(), f.Name, f.Usage)
			}
			if name, _ := pflag.UnquoteUsage(f); strings.Contains(name, " ") {
				t.Errorf("%s --%s: value name %q", c.CommandPath(), f.Name, name)
			}
		}
		c.LocalFlags().VisitAll(check)
		c.InheritedFlags().VisitAll(check)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// TestExitCodesLive runs the exit-code cases that need a live fleet: a
// kill that leaves survivors (as nobody, every signal is refused with
// EPERM) exits 1, and so does a kill cancelled at its prompt, in a real
// terminal.
func TestExitCodesLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fleets")
	}
	m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "theirs", Runtime: fleet.Containerd},
	}}).Manifest()
	sb := m.Sandbox("theirs")
	t.Run("survivors: not root, EPERM", func(t *testing.T) {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("no setpriv (util-linux)")
		}
		bin := proctest.NobodyBinary(t)
		// nobody writes its audit log beside the copy.
		dir := filepath.Dir(bin)
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		argv, _ := json.Marshal([]string{"kill", "--force", "--grace", "60s", "--audit-log", filepath.Join(dir, "audit.jsonl"), sb.ID})
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin)
		cmd.Env = append(os.Environ(), envRunArgs+"="+string(argv))
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		start := time.Now()
		_ = cmd.Run()
		took := time.Since(start)
		if code := cmd.ProcessState.ExitCode(); code != exitFailure {
			t.Errorf("exit %d, want %d\n%s%s", code, exitFailure, out.String(), errOut.String())
		}
		// EPERM ends the wait at once: the 60s grace is not waited out.
		if took > 40*time.Second {
			t.Errorf("took %s: the grace was waited out after EPERM", took)
		}
		for _, want := range []string{"EPERM", "refused SIGTERM with EPERM, not waited for", "refused with EPERM (not ours to signal)"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output does not say %q:\n%s", want, out.String())
			}
		}
		if strings.Contains(out.String(), "uninterruptible") {
			t.Errorf("EPERM blamed on uninterruptible sleep:\n%s", out.String())
		}
		for _, p := range sb.Processes {
			if !alive(p.Identity) {
				t.Errorf("%d %s died: nobody signalled it", p.PID, p.Comm)
			}
		}
	})
	t.Run("cancelled at the prompt", func(t *testing.T) {
		needTmux(t)
		bin := sandtopBinary(t)
		dir := t.TempDir()
		code := filepath.Join(dir, "code")
		session := "sandtop-cancel-" + strconv.Itoa(os.Getpid())
		tm := newTmux(t, dir)
		script := bin + " kill --audit-log " + filepath.Join(dir, "audit.jsonl") + " " + sb.ID + "; echo $? > " + code + "; sleep 60"
		tm.run("new-session", "-d", "-s", session, "-x", "120", "-y", "40", script)
		screen := waitScreen(t, tm.sock, session, "[y/N]")
		if !strings.Contains(screen, "Tear down 1 target, 3 processes?") {
			t.Errorf("prompt:\n%s", screen)
		}
		tm.run("send-keys", "-t", session, "n", "Enter")
		screen = waitScreen(t, tm.sock, session, "cancelled")
		deadline := time.Now().Add(10 * time.Second)
		var b []byte
		for time.Now().Before(deadline) {
			if b, _ = os.ReadFile(code); len(b) > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got := strings.TrimSpace(string(b)); got != strconv.Itoa(exitFailure) {
			t.Errorf("exit %q, want %d:\n%s", got, exitFailure, screen)
		}
		for _, p := range sb.Processes {
			if !alive(p.Identity) {
				t.Errorf("%d %s died after a cancel", p.PID, p.Comm)
			}
		}
	})
}
