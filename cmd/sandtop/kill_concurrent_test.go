package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/teardown"
)

// TestKillGracesRunTogether: three sandboxes whose workloads ignore
// SIGTERM, killed by one `kill --grace 3s`, finish within 5 s (one grace
// plus the kill, not three graces), all dead, and each target's events
// come out together and in order.
func TestKillGracesRunTogether(t *testing.T) {
	names := []string{"s1", "s2", "s3"}
	var spec fleet.Spec
	for _, n := range names {
		spec.Sandboxes = append(spec.Sandboxes, fleet.SandboxSpec{Name: n, Runtime: fleet.Containerd, IgnoreTERM: true})
	}
	m := fleettest.Start(t, spec).Manifest()
	args := []string{"kill", "--force", "--json", "--grace", "3s", "--audit-log", t.TempDir() + "/audit.jsonl"}
	for _, n := range names {
		args = append(args, m.Sandbox(n).ID)
	}
	start := time.Now()
	code, out, errOut := sandtop(t, args...)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	if took > 5*time.Second {
		t.Errorf("3 stubborn sandboxes with --grace 3s took %s, want under 5s", took.Round(time.Millisecond))
	}
	t.Logf("3 stubborn sandboxes, --grace 3s: %s", took.Round(time.Millisecond))
	var seq []teardown.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev teardown.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not a JSON event: %q", sc.Text())
		}
		seq = append(seq, ev)
	}
	// Each target is one run of events from plan to done.
	var order []string
	for i, ev := range seq {
		if i == 0 || ev.Sandbox != seq[i-1].Sandbox {
			if ev.Step != teardown.StepPlan {
				t.Errorf("%s's events start with %s, or another target's cut into them", ev.Sandbox, ev.Step)
			}
			order = append(order, ev.Sandbox)
		}
		if i > 0 && ev.Sandbox == seq[i-1].Sandbox && ev.Time.Before(seq[i-1].Time) {
			t.Errorf("%s: %s event before the one printed ahead of it", ev.Sandbox, ev.Step)
		}
	}
	if len(order) != len(names) {
		t.Errorf("targets' events interleave: %v", order)
	}
	for _, n := range names {
		for _, p := range m.Sandbox(n).Processes {
			if alive(p.Identity) {
				t.Errorf("%s: %d %s survived", n, p.PID, p.Comm)
			}
		}
	}
}
