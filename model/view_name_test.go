package model

import (
	"testing"
	"time"

	"github.com/sandtop/sandtop/proc"
)

// TestNameAsQualified: the name a sandbox keeps from its key is the one
// its namespace and ID spell, for sandboxes of processes and of
// leftovers, with a namespace and without.
func TestNameAsQualified(t *testing.T) {
	rules := Rules{shimRule, vm0Rule}
	s := snap(
		pr(200, 1, "/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id abc123def456 -address /run/containerd/containerd.sock"),
		pr(300, 1, "/usr/bin/firecracker --api-sock /run/vm0/sock/vm-7/api.sock", cwd("/var/lib/vm0/workspaces/vm-7")),
	)
	f := NewLeftovers(rules)
	v := Build(s, rules, nil)
	f.Record(v)
	lv := f.Apply(v, Found{Globs: f.Globs(v), Paths: nil})
	dead := Build(snap(), rules, nil)
	f.Record(dead)
	old := s.Time.Add(-time.Hour)
	gone := f.Apply(dead, Found{Globs: f.Globs(dead), Paths: []proc.PathEntry{{Path: "/var/lib/vm0/workspaces/vm-9", Kind: proc.KindDir, ModTime: old}}})
	want := map[string]string{"containerd:k8s.io/abc123def456": "k8s.io/abc123def456", "vm0:vm-7": "vm-7", "vm0:vm-9": "vm-9"}
	seen := 0
	for _, sb := range append(lv.Sandboxes, gone.Sandboxes...) {
		if got := sb.Name(); got != qualify(sb.Namespace, sb.ID) || sb.name == "" {
			t.Errorf("%s: Name %q (kept %q), namespace %q, ID %q", sb.Key(), got, sb.name, sb.Namespace, sb.ID)
		}
		if w, ok := want[sb.Key()]; ok {
			seen++
			if sb.Name() != w {
				t.Errorf("%s: Name %q, want %q", sb.Key(), sb.Name(), w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("saw %d of the sandboxes %v", seen, want)
	}
}
