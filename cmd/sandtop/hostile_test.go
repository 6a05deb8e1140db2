package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/assets"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// hostileText is what a process puts in its argv, comm, cwd and IDs to
// steer the operator's terminal: a title change (OSC 2), a colour (SGR),
// a newline that forges a row, a C1 CSI, DEL, a bidi override and a byte
// that is not UTF-8.
const hostileText = "\x1b]2;INJECTED\x07\x1b[31m\nforged-row\u009b\x7f\u202e\xff"

// hostileFleet is one sandbox whose every process-controlled string is
// hostile, and the leftover of a dead one with a hostile ID, under rules of
// the test's own.
type hostileFleet struct {
	tag            string
	id, leftoverID string
	rules, audit   string
	root           *exec.Cmd
	tmp            string
}

func startHostileFleet(t *testing.T) *hostileFleet {
	t.Helper()
	tag := fmt.Sprintf("%08x", rand.Uint32())
	f := &hostileFleet{
		tag:        tag,
		id:         "hx" + tag + hostileText + "-id",
		leftoverID: "hl" + tag + hostileText + "-left",
		tmp:        t.TempDir(),
	}
	f.audit = filepath.Join(f.tmp, "audit.jsonl")
	// comm is the name of the file executed: a link to sh named so.
	link := filepath.Join(f.tmp, "c\x1b]2;X\x07\n\u202ey")
	if err := os.Symlink("/bin/sh", link); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(f.tmp, "cwd"+hostileText)
	left := filepath.Join(f.tmp, "left")
	for _, d := range []string{cwd, filepath.Join(left, f.leftoverID)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.rules = filepath.Join(f.tmp, "rules.toml")
	rules := fmt.Sprintf(`[[rule]]
name = "hostile"
exe = '^agentbox%s'
flag = "--box"
cleanup = [%q]
leftovers = [%q, %q]
reconcile = ["true", "{id}"]
`, tag, filepath.Join(f.tmp, "gone", "{id}"), filepath.Join(left, "{id}"), "socket:"+filepath.Join(f.tmp, "sock", "{id}"))
	if err := os.WriteFile(f.rules, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	// A dead socket of the leftover: its kind's lines carry the ID too.
	if err := os.MkdirAll(filepath.Join(f.tmp, "sock"), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(f.tmp, "sock", f.leftoverID), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	f.root = f.start(t, link, cwd, f.id, "--note", hostileText)
	return f
}

// start starts a sandbox of the fleet's rule: sh (run as exe, in cwd)
// with the ID and more words in its argv, and its sleep.
func (f *hostileFleet) start(t *testing.T, exe, cwd, id string, more ...string) *exec.Cmd {
	t.Helper()
	c := &exec.Cmd{
		Path: exe,
		Args: append([]string{"agentbox" + f.tag + hostileText, "-c", "sleep 1000; :", "sh", "--box", id}, more...),
		Dir:  cwd,
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	// Wait for sh to fork its sleep.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", c.Process.Pid, c.Process.Pid)); len(kids) > 0 {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal("the hostile sandbox's sh never forked")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCleanupRefusedSaysWhy: a sandbox whose ID is ".." has its cleanup
// path refused, and the plan and the cleanup step say so and why; the
// kill still takes its processes.
func TestCleanupRefusedSaysWhy(t *testing.T) {
	f := startHostileFleet(t)
	dots := f.start(t, "/bin/sh", f.tmp, "..")
	code, out, errOut := f.run(t, "kill", "--dry-run", "..")
	if code != exitOK || !strings.Contains(out, `not removed: cleanup "`) || !strings.Contains(out, `{id} is "..", which is not one path component`) {
		t.Errorf("kill --dry-run ..: exit %d, want the refused cleanup and why in the plan:\n%s%s", code, out, errOut)
	}
	code, out, errOut = f.run(t, "kill", "--force", "--grace", "0", "--audit-log", f.audit, "..")
	if code != exitOK || !regexp.MustCompile(`(?m)^\[SKIP\]\s+cleanup\s+nothing to remove; not removed: cleanup ".*": refused: \{id\} is ".."`).MatchString(out) {
		t.Errorf("kill ..: exit %d, want the cleanup step to say why:\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(f.tmp, "gone")); err == nil {
		t.Error("something was made or kept at the cleanup's parent")
	}
	if err := dots.Wait(); err == nil {
		t.Error("the sandbox's root exited cleanly: it was not killed")
	}
}

// run runs sandtop with the fleet's rules.
func (f *hostileFleet) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	// Before the command's own words: a completion completes the last.
	flags := []string{"--rules", f.rules, "--no-presets"}
	if args[0] == "__complete" {
		return sandtop(t, append(append([]string{"__complete"}, flags...), args[1:]...)...)
	}
	return sandtop(t, append(args, flags...)...)
}

// assertTerminalSafe fails when text holds anything a terminal would act
// on (tabs allowed where the output is tab-separated), or a line that the
// newline in the hostile text forged.
func assertTerminalSafe(t *testing.T, what, text string, tabs bool) {
	t.Helper()
	if !utf8.ValidString(text) {
		t.Errorf("%s: not UTF-8: %q", what, text)
	}
	for _, r := range text {
		if r == '\n' || tabs && r == '\t' {
			continue
		}
		if model.Unsafe(r) {
			t.Errorf("%s: raw %U reaches the terminal:\n%q", what, r, text)
			return
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "forged-row") && !strings.Contains(line, `\nforged-row`) {
			t.Errorf("%s: the newline in a process's text forged a line: %q", what, line)
		}
	}
}

// TestHostileFleet runs every human-readable output over a sandbox whose
// argv, comm, cwd and captured ID carry terminal escapes, newlines, C1
// controls, a bidi override and bytes that are not UTF-8: each shows them
// escaped and forges no line, while the JSON keeps them exactly.
func TestHostileFleet(t *testing.T) {
	f := startHostileFleet(t)
	pid := strconv.Itoa(f.root.Process.Pid)

	code, out, errOut := f.run(t, "list", "--json")
	var doc model.Document
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("list --json: exit %d: %s", code, errOut)
	}
	// JSON strings hold only UTF-8: a byte that is not becomes U+FFFD,
	// the one thing JSON output cannot keep.
	sb := find(doc, strings.ToValidUTF8(f.id, "\ufffd"))
	if sb == nil || find(doc, strings.ToValidUTF8(f.leftoverID, "\ufffd")) == nil {
		t.Fatalf("list --json lost the hostile sandbox or its leftover (the JSON must keep the bytes):\n%s", out)
	}
	if left := find(doc, strings.ToValidUTF8(f.leftoverID, "\ufffd")); !slices.ContainsFunc(left.Leftovers, func(l model.LeftoverJSON) bool { return l.Kind == "socket" }) {
		t.Errorf("list --json: the leftover's dead socket is not found, so its kind's lines are not checked: %+v", left.Leftovers)
	}
	if len(sb.Processes) < 2 || !strings.Contains(strings.Join(sb.Processes[0].Argv, " "), strings.ToValidUTF8(hostileText, "\ufffd")) {
		t.Errorf("list --json: the argv is not kept as it is: %+v", sb.Processes)
	}

	outputs := []struct {
		name string
		args []string
		tabs bool
	}{
		{"list", []string{"list"}, false},
		{"list --tree --wide --all", []string{"list", "--tree", "--wide", "--all"}, false},
		{"kill --dry-run", []string{"kill", "--dry-run", f.id}, false},
		{"kill --dry-run of the leftover", []string{"kill", "--dry-run", f.leftoverID}, false},
		{"kill --dry-run --pid", []string{"kill", "--dry-run", "--pid", pid}, false},
		{"an unknown ID lists the nearest", []string{"kill", "--force", "hz"}, false},
		{"an ambiguous prefix lists the candidates", []string{"kill", "--force", "h"}, false},
		{"kill of a raw hostile argument", []string{"kill", "--force", hostileText}, false},
		{"completion of IDs", []string{"__complete", "kill", "h"}, true},
		{"completion of pids", []string{"__complete", "kill", "--pid", pid[:1]}, true},
		{"reap --once", []string{"reap", "--once", "--for", "0s", "--min-age", "0s", "--log-format", "text", "--select", "runtime:hostile"}, false},
		{"rules --check", []string{"rules", "--check", f.rules}, false},
		// JSON escapes what a terminal would obey and keeps the text.
		{"list --json", []string{"list", "--json", "--all"}, false},
		{"kill --dry-run --json", []string{"kill", "--dry-run", "--json", f.id}, false},
		{"reap --log-format json", []string{"reap", "--once", "--for", "0s", "--min-age", "0s", "--log-format", "json", "--select", "runtime:hostile"}, false},
	}
	for _, o := range outputs {
		code, out, errOut := f.run(t, o.args...)
		assertTerminalSafe(t, o.name+" (stdout)", out, o.tabs)
		assertTerminalSafe(t, o.name+" (stderr)", errOut, false)
		if code == exitOK && !strings.Contains(out+errOut, `\x1b`) && !strings.Contains(out, `\u001b`) && o.name != "rules --check" && o.name != "completion of IDs" {
			t.Errorf("%s: exit 0 but the hostile text is not shown escaped:\n%s%s", o.name, out, errOut)
		}
		if o.name == "completion of IDs" && (strings.Contains(out, "hl") || strings.Contains(out, "hx")) {
			// The shell would put an offered ID on the command line
			// raw: one a terminal would act on is not offered.
			t.Errorf("completion offers %q; never a hostile ID", out)
		}
	}

	rec := filepath.Join(f.tmp, "hostile.rec")
	if code, _, errOut := f.run(t, "record", "-o", rec, "--interval", "100ms", "--duration", "300ms"); code != 0 {
		t.Fatalf("record: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{{"record", "--dump", rec}, {"list", "--tree", "--from", rec, "--at", "+0s"}} {
		code, out, errOut := f.run(t, args...)
		assertTerminalSafe(t, strings.Join(args[:2], " ")+" (stdout)", out, false)
		assertTerminalSafe(t, strings.Join(args[:2], " ")+" (stderr)", errOut, false)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}

	code, out, errOut = f.run(t, "kill", "--force", "--json", "--audit-log", f.audit, f.leftoverID)
	assertTerminalSafe(t, "kill --json (stdout)", out, false)
	assertTerminalSafe(t, "kill --json (stderr)", errOut, false)
	if code != exitOK || !strings.Contains(out, `\u001b]2;INJECTED`) {
		t.Errorf("kill --json of the leftover: exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = f.run(t, "kill", "--force", "--reconcile", "--grace", "0", "--audit-log", f.audit, f.id)
	assertTerminalSafe(t, "kill (stdout)", out, false)
	assertTerminalSafe(t, "kill (stderr)", errOut, false)
	if code != exitOK || !strings.Contains(out, "done") || !strings.Contains(out, "reconcile") {
		t.Errorf("kill: exit %d, want the done and reconcile lines:\n%s%s", code, out, errOut)
	}
	if id, _, err := proc.ReadIdentity("/proc", f.root.Process.Pid); err == nil && id.PID != 0 {
		if _, st, _ := proc.ReadIdentity("/proc", f.root.Process.Pid); st != 'Z' {
			t.Errorf("the hostile sandbox's root survived its kill")
		}
	}
}

// TestHostileFleetRemote runs the outputs that read the hostile fleet
// through serve: its landing page and metrics, list --from its URL, and list --prometheus from a Prometheus that
// scrapes it. Each shows the hostile text escaped and forges no line.
func TestHostileFleetRemote(t *testing.T) {
	f := startHostileFleet(t)
	s := startServe(t, nil, "--rules", f.rules, "--no-presets", "--per-sandbox", "--interval", "100ms")
	waitHealthy(t, s)
	for _, path := range []string{"/", "/metrics"} {
		resp, err := http.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assertTerminalSafe(t, "serve "+path, string(body), false)
		if path == "/metrics" && !strings.Contains(string(body), "hx"+f.tag) {
			t.Errorf("serve /metrics has no series of the hostile sandbox")
		}
	}
	for _, args := range [][]string{{"list", "--from", s.url}, {"list", "--wide", "--all", "--from", s.url}} {
		code, out, errOut := f.run(t, args...)
		assertTerminalSafe(t, strings.Join(args[:2], " ")+" URL (stdout)", out, false)
		assertTerminalSafe(t, strings.Join(args[:2], " ")+" URL (stderr)", errOut, false)
		if code != 0 || !strings.Contains(out, `\x1b`) {
			t.Errorf("%v: exit %d, want the hostile sandbox shown escaped:\n%s%s", args, code, out, errOut)
		}
	}
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Skip("no prometheus: list --prometheus not run")
	}
	p := startPrometheus(t, assets.Alerts(), strings.TrimPrefix(s.url, "http://"))
	var out, errOut string
	var code int
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		code, out, errOut = sandtop(t, "list", "--prometheus", p.url)
		if code == 0 && strings.Contains(out, "hx"+f.tag) {
			break
		}
	}
	assertTerminalSafe(t, "list --prometheus (stdout)", out, false)
	assertTerminalSafe(t, "list --prometheus (stderr)", errOut, false)
	if code != 0 || !strings.Contains(out, "hx"+f.tag) {
		t.Errorf("list --prometheus: exit %d, the hostile sandbox not listed:\n%s%s", code, out, errOut)
	}
}
