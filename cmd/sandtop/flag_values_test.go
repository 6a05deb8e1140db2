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

	"github.com/sandtop/sandtop/teardown"
)

// goWords are the wordings of Go's own parsers, which an operator should
// never have to read.
var goWords = []string{"strconv", "ParseInt", "Atoi", "ParseFloat", "invalid syntax", "time: ", "missing unit",
	"unknown unit", "parsing \"", "lookup ", "dial ", "listen tcp", "value out of range"}

// TestBadFlagValues is the bad-value table of every command and flag: each
// bad value is a usage error (exit 2) naming the flag and what it takes,
// in sandtop's words, refused before anything is read or signalled
// (nothing on stdout).
func TestBadFlagValues(t *testing.T) {
	empty := t.TempDir()
	rules := filepath.Join(t.TempDir(), "rules.toml")
	if err := os.WriteFile(rules, []byte("[[rule]]\nname = \"x\"\nflag = \"--x-id\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		// flag is how the error names the flag; says is what it adds.
		flag, says string
	}{
		// kill
		{[]string{"kill", "--grace", "-1s", "x"}, "--grace", "from 0s to 1h"},
		{[]string{"kill", "--grace", "soon", "x"}, "--grace", "not a duration"},
		{[]string{"kill", "--grace", "-1", "x"}, "--grace", "not a duration"},
		{[]string{"kill", "--grace", "2h", "x"}, "--grace", "from 0s to 1h"},
		{[]string{"kill", "--deadline", "-5s", "x"}, "--deadline", "from 1s to 1h"},
		{[]string{"kill", "--deadline", "0", "x"}, "--deadline", "from 1s to 1h"},
		{[]string{"kill", "--pid", "-5"}, "--pid", "not a process ID (1 to 4194304)"},
		{[]string{"kill", "--pid", "0"}, "--pid", "not a process ID"},
		{[]string{"kill", "--pid", "abc"}, "--pid", `"abc": not a process ID`},
		{[]string{"kill", "--pid", "99999999999999999999"}, "--pid", "not a process ID"},
		{[]string{"kill", "--pid", "12,x"}, "--pid", `"x": not a process ID`},
		{[]string{"kill", "--proc-root", empty, "--pid", "4242"}, "--proc-root", "not a procfs"},
		// list
		{[]string{"list", "--proc-root", empty}, "--proc-root", "not a procfs"},
		{[]string{"list", "--proc-root", "/nonexistent"}, "--proc-root", "no such file or directory"},
		{[]string{"list", "--at", "03:12"}, "--at", "needs --from"},
		// reap
		{[]string{"reap", "--interval", "1ms"}, "--interval", "from 100ms to 24h"},
		{[]string{"reap", "--interval", "abc"}, "--interval", "not a duration"},
		{[]string{"reap", "--for", "-1s"}, "--for", "from 0s to 8784h"},
		{[]string{"reap", "--min-age", "-1m"}, "--min-age", "from 0s to 8784h"},
		{[]string{"reap", "--max", "-1"}, "--max", "from 0 to 10000"},
		{[]string{"reap", "--max", "abc"}, "--max", "not a whole number"},
		{[]string{"reap", "--max", "99999999999999999999"}, "--max", "out of range"},
		{[]string{"reap", "--grace", "-1s"}, "--grace", "from 0s to 1h"},
		{[]string{"reap", "--deadline", "-5s"}, "--deadline", "from 1s to 1h"},
		{[]string{"reap", "--listen", "nonsense"}, "--listen", "not an address"},
		{[]string{"reap", "--listen", ":99999"}, "--listen", "not a port"},
		{[]string{"reap", "--log-format", "xml"}, "--log-format", "want text or json"},
		// record
		{[]string{"record", "-o", "x", "--interval", "1ms"}, "--interval", "from 100ms to 24h"},
		{[]string{"record", "-o", "x", "--duration", "-1s"}, "--duration", "from 0s to 8784h"},
		{[]string{"record", "-o", "x", "--key-every", "-1s"}, "--key-every", "from 0s to 8784h"},
		{[]string{"record", "-o", "x", "--max-size", "lots"}, "--max-size", "not a size"},
		{[]string{"record", "-o", "x", "--max-size", "-1"}, "--max-size", "not a size"},
		// serve
		{[]string{"serve", "--interval", "10ms"}, "--interval", "from 100ms to 24h"},
		{[]string{"serve", "--per-sandbox-limit", "0"}, "--per-sandbox-limit", "from 1 to 100000"},
		{[]string{"serve", "--per-sandbox-limit", "x"}, "--per-sandbox-limit", "not a whole number"},
		{[]string{"serve", "--listen", "256.0.0.1:1"}, "--listen", "not an address"},
		{[]string{"serve", "--listen", "9464"}, "--listen", "not an address"},
		// the screen and watch
		{[]string{"--interval", "10ms"}, "--interval", "from 100ms to 24h"},
		{[]string{"--grace", "-1s"}, "--grace", "from 0s to 1h"},
		{[]string{"watch", "--interval", "0s"}, "--interval", "from 100ms to 24h"},
		{[]string{"watch", "--interval", "1"}, "--interval", "not a duration"},
		// the global flags, on any command
		{[]string{"serve", "--proc-root", empty}, "--proc-root", "not a procfs"},
		{[]string{"reap", "--proc-root", empty}, "--proc-root", "not a procfs"},
		{[]string{"record", "-o", filepath.Join(t.TempDir(), "r"), "--proc-root", empty}, "--proc-root", "not a procfs"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := sandtop(t, append(tc.args, "--rules", rules)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr %q", code, exitUsage, errOut)
			}
			if !strings.Contains(errOut, tc.flag) || !strings.Contains(errOut, tc.says) {
				t.Errorf("stderr %q: want it to name %s and say %q", errOut, tc.flag, tc.says)
			}
			for _, w := range goWords {
				if strings.Contains(errOut, w) {
					t.Errorf("stderr %q speaks Go's words (%q)", errOut, w)
				}
			}
			if out != "" {
				t.Errorf("stdout %q: a refused command prints nothing there", out)
			}
		})
	}
}

// TestKillDryRunJSON: --json is honoured by --dry-run too, one plan a
// line, and nothing is signalled; a process that ignores SIGTERM is named
// as the text plan names it.
func TestKillDryRunJSON(t *testing.T) {
	// trap '' makes SIGTERM ignored, and exec keeps it ignored in sleep.
	c := exec.Command("sh", "-c", "trap '' TERM; exec sleep 1000")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	pid := strconv.Itoa(c.Process.Pid)
	var p planJSON
	waitUntil(5*time.Second, func() bool {
		_, out, _ := sandtop(t, "kill", "--dry-run", "--json", "--pid", pid)
		return json.Unmarshal([]byte(out), &p) == nil && len(p.Members) == 1 && p.Members[0].Comm == "sleep"
	})
	code, out, errOut := sandtop(t, "kill", "--dry-run", "--json", "--pid", pid)
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || p.RootPID != c.Process.Pid || len(p.Members) != 1 ||
		p.Members[0].Comm != "sleep" || len(p.Steps) == 0 || p.GraceMS != teardown.DefaultGrace.Milliseconds() || p.Suspects == nil {
		t.Errorf("exit %d, stdout %q, stderr %q: want one plan as JSON", code, out, errOut)
	}
	_, text, _ := sandtop(t, "kill", "--dry-run", "--pid", pid)
	if !strings.Contains(text, "ignores SIGTERM: pid "+pid+" sleep") || len(p.Members) != 1 || p.Members[0].Resists != "ignores SIGTERM" {
		t.Errorf("the SIGTERM-ignorer: the text plan says\n%s\nthe JSON plan %s", text, out)
	}
	if c.ProcessState != nil {
		t.Error("the dry run signalled the process")
	}
}
