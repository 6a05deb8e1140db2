package teardown

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// AuditRecord is one line of the audit log: who tore down what, how, and
// what came of it.
type AuditRecord struct {
	Time time.Time `json:"time"`
	// Who: the real uid and the controlling terminal ("" when none).
	UID int    `json:"uid"`
	TTY string `json:"tty"`
	// Via names the front end: "kill" or "tui".
	Via string `json:"via"`
	// Target is the sandbox's Name (namespace/id) or "pid N"; Key, ID
	// and Namespace say which sandbox exactly (empty for a subtree).
	Target    string         `json:"target"`
	Key       string         `json:"key,omitempty"`
	ID        string         `json:"id,omitempty"`
	Namespace string         `json:"namespace,omitempty"`
	Runtime   string         `json:"runtime"`
	RootPID   int            `json:"root_pid"`
	Cgroup    string         `json:"cgroup,omitempty"`
	Strategy  string         `json:"strategy"`
	Members   []AuditProcess `json:"members"`
	Cleanup   []string       `json:"cleanup,omitempty"`
	// Leftovers are the paths of a sandbox with no process left that the
	// teardown was to remove.
	Leftovers []string `json:"leftovers,omitempty"`
	// Reason is why an automatic teardown (the reaper) chose the target.
	Reason string `json:"reason,omitempty"`
	Totals Totals `json:"totals"`
}

// AuditProcess names a planned process by identity.
type AuditProcess struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start_ticks"`
	Comm  string `json:"comm"`
}

// NewAuditRecord describes a finished teardown.
func NewAuditRecord(via string, p *Plan, t Totals) AuditRecord {
	rec := AuditRecord{
		Time: time.Now().UTC(), UID: os.Getuid(), TTY: controllingTTY(), Via: via,
		Target: p.Target, Runtime: p.Runtime, RootPID: p.RootPID, Cgroup: p.Cgroup,
		Strategy: p.Strategy(), Cleanup: p.Cleanup, Totals: t,
	}
	rec.Leftovers = removedPaths(p.Leftovers)
	if p.Sandbox != nil {
		rec.Key, rec.ID, rec.Namespace = p.Key, p.Sandbox.ID, p.Sandbox.Namespace
	}
	for _, m := range p.Members {
		rec.Members = append(rec.Members, AuditProcess{PID: m.PID, Start: m.Start, Comm: m.Comm})
	}
	return rec
}

// controllingTTY names the terminal on stdin, stdout or stderr.
func controllingTTY() string {
	for _, fd := range []int{0, 1, 2} {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
			continue
		}
		if name, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err == nil {
			return name
		}
	}
	return ""
}

// DefaultAuditPath is $SANDTOP_AUDIT_LOG when set, else
// /var/log/sandtop/audit.jsonl for root, else
// $XDG_STATE_HOME/sandtop/audit.jsonl (~/.local/state when unset).
func DefaultAuditPath() string {
	if p := os.Getenv("SANDTOP_AUDIT_LOG"); p != "" {
		return p
	}
	if os.Geteuid() == 0 {
		return "/var/log/sandtop/audit.jsonl"
	}
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "sandtop", "audit.jsonl")
}

// AppendAudit appends rec as one JSON line. The line goes out in a single
// write on an O_APPEND descriptor, so concurrent sandtops never interleave
// their records.
func AppendAudit(path string, rec AuditRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("audit record: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	return nil
}
