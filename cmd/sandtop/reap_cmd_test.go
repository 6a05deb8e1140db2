package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/assets"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/reap"
	"github.com/sandtop/sandtop/proc/proctest"
	"github.com/sandtop/sandtop/teardown"
)

// TestReapRefusals: --apply needs a selection restricted by a badge and,
// unless --once, a --for of at least a minute; bad flags are usage errors.
// Nothing here may reach the host: every case is refused before a scan.
func TestReapRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, errHas string
		args         []string
	}{
		{"apply without a badge", "restricted by a badge", []string{"reap", "--apply", "--select", "runtime:vm0"}},
		{"apply with a negated badge only", "restricted by a badge", []string{"reap", "--apply", "--select", "!badge:paused"}},
		{"one of several selections without a badge", `--select "vm0"`, []string{"reap", "--apply", "--for", "2m", "--select", "badge:orphan", "--select", "vm0"}},
		{"apply with a short --for", "--for 30s: under 1m0s only with --once", []string{"reap", "--apply", "--for", "30s"}},
		{"unknown badge", "--select \"badge:orphn\"", []string{"reap", "--select", "badge:orphn"}},
		{"bad log format", `"--log-format" flag: want text or json`, []string{"reap", "--log-format", "xml"}},
		{"zero interval", `"--interval" flag: out of range: from 100ms to 24h`, []string{"reap", "--interval", "0s"}},
		{"negative max", `"--max" flag: out of range: from 0 to 10000`, []string{"reap", "--max", "-1"}},
		{"arguments", "unknown command", []string{"reap", "7d1e"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := sandtop(t, tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.errHas) || out != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit %d saying %q", code, errOut, out, exitUsage, tc.errHas)
			}
		})
	}
}

// fleetSelect restricts a reap to the fleet's sandboxes.
func fleetSelect(m fleet.Manifest, badge string) []string {
	var out []string
	for _, s := range m.Sandboxes {
		out = append(out, "--select", "badge:"+badge+" id:"+s.ID)
	}
	return out
}

// TestReapDryRunSendsNoSignal runs `sandtop reap` (dry run) under strace
// beside orphans it would reap: every candidate is logged with what would
// be done, and no signal or pidfd leaves the process.
func TestReapDryRunSendsNoSignal(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		proctest.SkipMissing(t, "strace not installed (make test-deps installs it)")
	}
	m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0, Orphan: true},
		{Name: "ctr", Runtime: fleet.Containerd, Orphan: true},
		{Name: "healthy", Runtime: fleet.Containerd},
	}}).Manifest()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"reap", "--once", "--for", "600ms", "--interval", "100ms", "--min-age", "0", "--log-format", "json"}, fleetSelect(m, "orphan")...)
	argsJSON, _ := json.Marshal(args)
	trace := filepath.Join(t.TempDir(), "strace.out")
	cmd := exec.Command("strace", "-f", "-qq", "-o", trace, "-e", "trace=execve,kill,tkill,tgkill,pidfd_send_signal,rt_sigqueueinfo,rt_tgsigqueueinfo,pidfd_open", self)
	cmd.Env = append(os.Environ(), envRunArgs+"="+string(argsJSON))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sandtop reap under strace: %v\n%s", err, out)
	}
	would := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var e reap.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("not a JSON decision: %q", sc.Text())
		}
		if e.Action == "would-reap" && e.Plan != "" && strings.Contains(e.Reason, "orphan for") {
			would[e.ID] = true
		}
	}
	for _, n := range []string{"vm", "ctr"} {
		if !would[m.Sandbox(n).ID] {
			t.Errorf("%s: no would-reap decision in\n%s", n, out)
		}
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	tgid := strings.Fields(lines[0])[0] // the execve of the program itself
	own := map[string]bool{tgid: true}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 {
			own[f[0]] = true
		}
	}
	foreign := 0
	for _, l := range lines {
		if classifySignalCall(l, tgid, own) == foreignSignal {
			foreign++
			t.Errorf("the dry run made a signal call: %s", l)
		}
	}
	t.Logf("dry run: %d traced calls, %d foreign signal calls", len(lines), foreign)
	for _, s := range m.Sandboxes {
		for _, p := range s.Processes {
			if p.Role != fleet.RoleZombie && !alive(p.Identity) {
				t.Errorf("%s: %s died in a dry run", s.Name, p.Identity)
			}
		}
	}
}

// TestKillLeftover: `sandtop kill ID` on a sandbox with no process left
// removes its leftovers (here from a rules file's explicit leftovers
// template) and reports each step, with the audit record.
func TestKillLeftover(t *testing.T) {
	m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0, Orphan: true},
	}}).Manifest()
	s := m.Sandbox("vm")
	var ws string
	for _, d := range s.Dirs {
		if filepath.Base(filepath.Dir(d)) == "workspaces" {
			ws = d
		}
	}
	sock := "/run/vm0/sock/" + s.ID
	if err := os.MkdirAll(sock, 0o755); err != nil {
		proctest.SkipMissing(t, "cannot make %s: %v", sock, err)
	}
	t.Cleanup(func() { os.RemoveAll(sock) })
	rules := filepath.Join(t.TempDir(), "rules.toml")
	base := filepath.Dir(filepath.Dir(ws))
	if err := os.WriteFile(rules, []byte(fmt.Sprintf(`[[rule]]
name = "vm0"
exe = '(^|/)firecracker$'
argv = '--api-sock /run/vm0/sock/(?P<id>[^/ ]+)/'
process_group = true
supervisor = { ancestor = 'start --config %s/' }
cleanup = ["/run/vm0/sock/{id}"]
leftovers = ["%s/workspaces/{id}"]
`, regexp.QuoteMeta(base), base)), 0o600); err != nil {
		t.Fatal(err)
	}
	// SIGKILL by hand, as an operator would.
	for _, p := range s.Processes {
		if pin, err := teardown.Pin("/proc", p.Identity); err == nil {
			_ = pin.Signal(unix.SIGKILL)
			pin.Close()
		}
	}
	for _, p := range s.Processes {
		proctest.Eventually(5*time.Second, func() bool { return !alive(p.Identity) })
	}
	common := []string{"--no-presets", "--rules", rules}
	doc := listJSON(t, common...)
	sb := find(doc, s.ID)
	if sb == nil || len(sb.Processes) != 0 || len(sb.Leftovers) != 2 || sb.Badges[0] != "leftover" {
		t.Fatalf("list --json shows the dead VM as %+v", sb)
	}
	code, out, _ := sandtop(t, append(common, "kill", "--dry-run", s.ID)...)
	if code != 0 || !strings.Contains(out, "no process left") || !strings.Contains(out, "removes ") || !strings.Contains(out, ws) {
		t.Errorf("kill --dry-run: exit %d\n%s", code, out)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	code, out, errOut := sandtop(t, append(common, "kill", "--force", "--audit-log", audit, s.ID)...)
	if code != 0 || !strings.Contains(out, "removed "+ws) || !strings.Contains(out, "removed "+sock) || strings.Contains(out, "[FAIL]") {
		t.Errorf("kill: exit %d %s\n%s", code, errOut, out)
	}
	for _, p := range []string{ws, sock} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s survived", p)
		}
	}
	if _, err := os.Stat(filepath.Dir(ws)); err != nil {
		t.Errorf("the workspaces directory itself went: %v", err)
	}
	b, _ := os.ReadFile(audit)
	var rec teardown.AuditRecord
	if json.Unmarshal(b, &rec) != nil || rec.Target != s.ID || len(rec.Leftovers) != 2 {
		t.Errorf("audit record %s", b)
	}
}

// TestReapMetricsAndSIGTERM: --listen serves the reaper's series while it
// runs, and SIGTERM ends a looping reaper cleanly.
func TestReapMetricsAndSIGTERM(t *testing.T) {
	m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0, Orphan: true},
	}}).Manifest()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errOut strings.Builder
	go func() {
		args := append([]string{"reap", "--interval", "100ms", "--for", "1h", "--listen", addr, "--log-format", "json"}, fleetSelect(m, "orphan")...)
		done <- run(args, strings.NewReader(""), pw, &errOut)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatalf("no decision logged: %s", errOut.String())
	}
	go io.Copy(io.Discard, pr)
	var e reap.Entry
	if err := json.Unmarshal(lines.Bytes(), &e); err != nil || e.Action != "wait" || !strings.Contains(e.Reason, "of 1h") {
		t.Errorf("first decision %q: %v", lines.Text(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`sandtop_reaper_candidates{runtime="vm0"} 1`, `sandtop_reaper_skipped_total{reason="for"}`, `sandtop_scan_duration_seconds_count`, `sandtop_build_info`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
	// The reaper is looping: SIGTERM (caught by its signal.Notify, which
	// was set up before the first decision was logged) ends it.
	if err := unix.Kill(os.Getpid(), unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after SIGTERM: %s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reaper did not stop on SIGTERM")
	}
}

// TestReapUnitFlags: the systemd unit's ExecStart is a reap command line
// this sandtop accepts, with --apply and a badge-restricted selection.
func TestReapUnitFlags(t *testing.T) {
	unit, err := assets.Unit("reap")
	if err != nil {
		t.Fatal(err)
	}
	_, line, ok := strings.Cut(string(unit), "ExecStart=/usr/local/bin/sandtop reap ")
	if !ok {
		t.Fatalf("no reap ExecStart in\n%s", unit)
	}
	line, _, _ = strings.Cut(line, "\n")
	cmd := newReapCmd(&globals{})
	if err := cmd.ParseFlags(strings.Fields(line)); err != nil {
		t.Fatalf("ExecStart flags %q: %v", line, err)
	}
	o := &reapOpts{}
	f := cmd.Flags()
	o.apply, _ = f.GetBool("apply")
	o.forD, _ = f.GetDuration("for")
	o.minAge, _ = f.GetDuration("min-age")
	o.max, _ = f.GetInt("max")
	o.interval, _ = f.GetDuration("interval")
	o.grace, _ = f.GetDuration("grace")
	cfg, err := o.config()
	if err == nil {
		err = cfg.Check()
	}
	if err != nil || !cfg.Apply {
		t.Errorf("the unit's reap %q: apply %v, %v", line, cfg.Apply, err)
	}
}
