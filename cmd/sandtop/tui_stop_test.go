package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/proc/proctest"
	"github.com/sandtop/sandtop/teardown"
)

// TestTUIStopDuringGraceTellsTheTruth kills a SIGTERM-ignoring sandbox on
// the live screen with a 60 s grace. Stopped by Ctrl-C twice, the screen
// warns naming Ctrl-C, exits 1 naming the survivors, and the audit record
// says the operator stopped it before SIGKILL (never "still alive after
// SIGKILL"). With x instead, the grace ends at once and the sandbox dies.
func TestTUIStopDuringGraceTellsTheTruth(t *testing.T) {
	needTmux(t)
	m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "stopped", Runtime: fleet.Containerd, IgnoreTERM: true},
		{Name: "hurried", Runtime: fleet.Containerd, IgnoreTERM: true},
	}}).Manifest()
	bin := sandtopBinary(t)
	dir := t.TempDir()
	tm := newTmux(t, dir)

	// screen starts sandtop on the sandbox, confirms its teardown and
	// waits for the grace; it returns the session and the files of its
	// exit code, stderr and audit log.
	screen := func(name string) (session, code, stderr, audit string) {
		sb := m.Sandbox(name)
		session = "sandtop-stop-" + name + "-" + strconv.Itoa(os.Getpid())
		code, stderr, audit = filepath.Join(dir, name+".code"), filepath.Join(dir, name+".err"), filepath.Join(dir, name+".jsonl")
		script := bin + " --grace 60s --audit-log " + audit + " 2>" + stderr + "; echo $? >" + code + "; sleep 600"
		tm.run("new-session", "-d", "-s", session, "-x", "150", "-y", "40", script)
		waitScreen(t, tm.sock, session, " sandbox")
		tm.run("send-keys", "-t", session, "/", "id:"+sb.ID[:16], "Enter")
		waitScreen(t, tm.sock, session, "1 of")
		tm.run("send-keys", "-t", session, "K")
		waitScreen(t, tm.sock, session, "Tear down")
		tm.run("send-keys", "-t", session, "y")
		waitScreen(t, tm.sock, session, "teardown running")
		return session, code, stderr, audit
	}
	readCode := func(path string) int {
		t.Helper()
		var b []byte
		if !proctest.Eventually(30*time.Second, func() bool { b, _ = os.ReadFile(path); return len(b) > 0 }) {
			t.Fatalf("sandtop did not exit")
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	record := func(path string) teardown.AuditRecord {
		t.Helper()
		var rec teardown.AuditRecord
		b, err := os.ReadFile(path)
		if err != nil || json.Unmarshal(b, &rec) != nil {
			t.Fatalf("audit record %q: %v", b, err)
		}
		return rec
	}

	t.Run("Ctrl-C twice", func(t *testing.T) {
		session, code, stderr, audit := screen("stopped")
		tm.run("send-keys", "-t", session, "C-c")
		waitScreen(t, tm.sock, session, "Ctrl-C again stops it before SIGKILL")
		tm.run("send-keys", "-t", session, "C-c")
		if got := readCode(code); got != exitFailure {
			t.Errorf("exit %d after stopping a teardown, want %d", got, exitFailure)
		}
		errText, _ := os.ReadFile(stderr)
		if !strings.Contains(string(errText), "stopped by the operator during the grace, before SIGKILL") {
			t.Errorf("stderr does not say the teardown was stopped: %q", errText)
		}
		rec := record(audit)
		if rec.Totals.Stopped != "during the grace, before SIGKILL" || len(rec.Totals.Survivors) == 0 {
			t.Errorf("audit record does not say the operator stopped it: %+v", rec.Totals)
		}
		for _, s := range rec.Totals.Survivors {
			if strings.Contains(s.Reason, "after SIGKILL") || !strings.Contains(s.Reason, "SIGKILL never") {
				t.Errorf("survivor %d: reason %q claims what did not happen", s.PID, s.Reason)
			}
		}
		if !strings.Contains(string(errText), strconv.Itoa(rec.Totals.Survivors[0].PID)) {
			t.Errorf("stderr does not name the survivors: %q", errText)
		}
	})

	t.Run("x sends SIGKILL now", func(t *testing.T) {
		session, code, _, audit := screen("hurried")
		start := time.Now()
		tm.run("send-keys", "-t", session, "x")
		waitScreen(t, tm.sock, session, "finished:")
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("x took %s to end a 60 s grace", took)
		}
		tm.run("send-keys", "-t", session, "q")
		if got := readCode(code); got != 0 {
			t.Errorf("exit %d after a clean teardown", got)
		}
		assertTornDownAndAudited(t, m.Sandbox("hurried"), audit)
		if rec := record(audit); rec.Totals.Stopped != "" {
			t.Errorf("a hurried teardown is recorded as stopped: %+v", rec.Totals)
		}
	})
}
