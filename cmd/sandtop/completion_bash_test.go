package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
)

// TestBashCompletionWithoutBashCompletionPackage loads `sandtop completion
// bash` into a bare bash (--norc: no bash-completion package) and calls the
// function it registers as bash would on TAB. It must complete commands,
// sandbox IDs after `kill` and member pids after `kill --pid`, with no
// "command not found".
func TestBashCompletionWithoutBashCompletionPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sandtop and runs a fleet")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := sandtopBinary(t)
	script := filepath.Join(t.TempDir(), "sandtop.bash")
	out, err := exec.Command(bin, "completion", "bash").Output()
	if err != nil {
		t.Fatalf("sandtop completion bash: %v", err)
	}
	if err := os.WriteFile(script, out, 0o644); err != nil {
		t.Fatal(err)
	}
	m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "comp", Runtime: fleet.Containerd},
	}}).Manifest()
	sb := m.Sandbox("comp")

	// complete runs one TAB on line (cursor at its end) and returns
	// COMPREPLY, one entry a line, and what bash said on stderr.
	complete := func(t *testing.T, words ...string) (reply []string, stderr string) {
		t.Helper()
		line := strings.Join(words, " ")
		var q []string
		for _, w := range words {
			q = append(q, strconv.Quote(w))
		}
		prog := `source "$1" || exit 9
complete -p sandtop >/dev/null || exit 8
compopt() { :; }  # only valid inside a real completion; cobra calls it
COMP_WORDS=(` + strings.Join(q, " ") + `)
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=` + strconv.Quote(line) + `
COMP_POINT=${#COMP_LINE}
COMP_TYPE=63 COLUMNS=200
__start_sandtop
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog, "bash", script)
		var errb strings.Builder
		cmd.Stderr = &errb
		o, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash: %v (stderr %q)", err, errb.String())
		}
		for _, l := range strings.Split(strings.TrimSpace(string(o)), "\n") {
			if l != "" {
				reply = append(reply, l)
			}
		}
		return reply, errb.String()
	}
	has := func(reply []string, prefix, contains string) bool {
		for _, r := range reply {
			if strings.HasPrefix(r, prefix) && strings.Contains(r, contains) {
				return true
			}
		}
		return false
	}

	t.Run("command", func(t *testing.T) {
		reply, stderr := complete(t, bin, "ki")
		if stderr != "" || !has(reply, "kill", "") {
			t.Errorf("`sandtop ki<TAB>` offers %q, stderr %q", reply, stderr)
		}
	})
	t.Run("sandbox ID", func(t *testing.T) {
		reply, stderr := complete(t, bin, "kill", sb.ID[:4])
		if stderr != "" || !has(reply, sb.ID[:4], "") {
			t.Errorf("`sandtop kill %s<TAB>` offers %q, stderr %q", sb.ID[:4], reply, stderr)
		}
	})
	t.Run("member pid", func(t *testing.T) {
		reply, stderr := complete(t, bin, "kill", "--pid", "")
		if stderr != "" {
			t.Errorf("stderr %q", stderr)
		}
		for _, p := range sb.Processes {
			if p.Role == "supervisor" {
				continue
			}
			if !has(reply, strconv.Itoa(p.PID), sb.ID[:4]) {
				t.Errorf("`sandtop kill --pid <TAB>` does not offer %d described by its sandbox %s: %q", p.PID, sb.ID, reply)
			}
		}
	})
	t.Run("member pid after =", func(t *testing.T) {
		pid := strconv.Itoa(sb.Processes[len(sb.Processes)-1].PID)
		reply, stderr := complete(t, bin, "kill", "--pid", "=", pid)
		if stderr != "" || !has(reply, pid, "") && !has(reply, "--pid="+pid, "") {
			t.Errorf("`sandtop kill --pid=%s<TAB>` offers %q, stderr %q", pid, reply, stderr)
		}
	})
}
