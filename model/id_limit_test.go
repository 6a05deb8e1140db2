package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc"
)

// TestIDLimit: an ID (or a namespace) longer than MaxIDBytes is kept as
// its refused form, which says its length and the limit, tells two long
// IDs apart, and no cleanup, leftover or reconcile template ever uses.
func TestIDLimit(t *testing.T) {
	r := &Rule{Name: "box", Flag: "--id", NamespaceFlag: "--ns", Cleanup: []string{"/var/lib/box/{id}"}, Reconcile: []string{"box", "rm", "{id}"}}
	match := func(id, ns string) Match {
		t.Helper()
		m, ok := r.Match(&proc.Process{PID: 9, Argv: []string{"box", "--id", id, "--ns", ns}})
		if !ok {
			t.Fatalf("no match for an ID of %d bytes", len(id))
		}
		return m
	}
	ok := strings.Repeat("a", MaxIDBytes)
	if m := match(ok, "ns"); m.ID != ok || IsRefusedID(m.ID) {
		t.Errorf("an ID of %d bytes: got %q", MaxIDBytes, m.ID)
	}
	long := strings.Repeat("b", 4000)
	m := match(long, strings.Repeat("n", 300))
	if !IsRefusedID(m.ID) || len(m.ID) > 2*MaxIDBytes || !strings.Contains(m.ID, "4000-byte ID refused/limit 255") || !IsRefusedID(m.Namespace) {
		t.Errorf("an ID of 4000 bytes: got ID %q, namespace %q", m.ID, m.Namespace)
	}
	if other := match(long+"c", "ns"); other.ID == m.ID {
		t.Errorf("two long IDs with the same start read alike: %q", m.ID)
	}
	if paths, err := m.CleanupPaths(); len(paths) > 0 || !errors.Is(err, ErrUnsafeCleanup) || !strings.Contains(err.Error(), "{id} was refused: it is longer than 255 bytes") {
		t.Errorf("cleanup of a refused ID: %q, %v", paths, err)
	}
	if argv, err := m.ReconcileArgv(); argv != nil || err == nil || !strings.Contains(err.Error(), "{id} was refused") {
		t.Errorf("reconcile of a refused ID: %q, %v", argv, err)
	}
}
