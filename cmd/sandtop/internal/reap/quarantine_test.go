package reap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQuarantineState: failures count only under the same evidence, the
// state survives a reload, --retry-quarantined gives one more try, and a
// state file sandtop did not write is refused by name.
func TestQuarantineState(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	q, err := LoadQuarantine(dir, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	q.Failed("vm0:a", "a", "vm0", "e1", "EPERM", now)
	q.Failed("vm0:a", "a", "vm0", "e2", "EPERM", now) // new evidence: counts from 1
	q.Failed("vm0:a", "a", "vm0", "e2", "EPERM", now)
	if f := q.Failed("vm0:a", "a", "vm0", "e2", "EPERM again", now); !f.Quarantined() || f.Count != 3 {
		t.Fatalf("third failure under e2: %+v", f)
	}
	if err := q.Save(); err != nil {
		t.Fatal(err)
	}
	q, err = LoadQuarantine(dir, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	if f := q.Blocked("vm0:a", "e2"); f == nil || f.LastError != "EPERM again" || q.ByRuntime()["vm0"] != 1 {
		t.Fatalf("after a reload: %+v %v", f, q.ByRuntime())
	}
	q, _ = LoadQuarantine(dir, 3, true)
	if f := q.Blocked("vm0:a", "e2"); f != nil {
		t.Fatalf("--retry-quarantined still blocks: %+v", f)
	}
	if f := q.Failed("vm0:a", "a", "vm0", "e2", "EPERM", now); !f.Quarantined() {
		t.Fatalf("one more failure after a retry: %+v", f)
	}
	if q.Blocked("vm0:a", "e3") != nil || q.ByRuntime()["vm0"] != 0 {
		t.Fatal("new evidence still blocked")
	}
	if err := os.WriteFile(filepath.Join(dir, quarantineFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadQuarantine(dir, 3, false); err == nil || !strings.Contains(err.Error(), quarantineFile) {
		t.Fatalf("a corrupt state: %v", err)
	}
}
