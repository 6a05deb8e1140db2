package teardown

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// TestPlanFacts checks the words an operator confirms, for each shape a
// plan takes: the cgroup line says which cgroup (or none, and why), a
// paused target says what happens to it, cleanup names the paths, and the
// steps are the ones Steps plans.
func TestPlanFacts(t *testing.T) {
	members := []Member{
		{Identity: proc.Identity{PID: 11, Start: 2}, PPID: 10, Comm: "worker", Depth: 1, Cgroup: "/box/1"},
		{Identity: proc.Identity{PID: 12, Start: 2}, PPID: 10, Comm: "sh", Depth: 1, Zombie: true, Cgroup: "/box/1"},
		{Identity: proc.Identity{PID: 10, Start: 1}, PPID: 1, Comm: "shim", Cgroup: "/box/1"},
	}
	sb := &model.Sandbox{ID: "abc"}
	for _, tc := range []struct {
		name string
		plan Plan
		want Facts
	}{
		{
			name: "dedicated v2 cgroup, supervised",
			plan: Plan{Target: "abc", Runtime: "containerd", Sandbox: sb, RootPID: 10, Members: members, Cgroup: "/box/1", CgroupDir: "/sys/fs/cgroup/box/1",
				Supervised: true, SupervisorNote: "supervisor containerd (pid 5) listens on /run/c.sock", Grace: time.Second},
			want: Facts{Title: "sandbox abc", Runtime: "containerd", Root: "pid 10 shim", Processes: 3, Zombies: 1,
				Cgroup: "/box/1 (dedicated: cgroup.kill)", Supervisor: "containerd (pid 5) listens on /run/c.sock", Cleanup: "left to the supervisor",
				Strategy: "graceful: SIGTERM, 1s grace, then SIGKILL",
				Steps:    []Step{StepPin, StepTerm, StepWait, StepCgroupKill, StepVerify, StepCleanup, StepDone}},
		},
		{
			name: "v1 freezer, frozen, orphan with cleanup, immediate",
			plan: Plan{Target: "abc", Runtime: "cube", Sandbox: sb, RootPID: 10, Members: members, Freezer: "/box/1", FreezerDir: "/sys/fs/cgroup/freezer/box/1",
				Frozen: true, FrozenV1: true, SupervisorNote: "supervisor gone", Cleanup: []string{"/run/abc", "/var/lib/abc"}},
			want: Facts{Title: "sandbox abc", Runtime: "cube", Root: "pid 10 shim", Processes: 3, Zombies: 1,
				Cgroup: "v1 freezer /box/1 (dedicated: freeze, kill, thaw)", State: "paused (frozen)", Supervisor: "gone",
				Cleanup: "orphan: then removes /run/abc, /var/lib/abc", CleanupPaths: []string{"/run/abc", "/var/lib/abc"},
				Strategy: "immediate SIGKILL", Steps: []Step{StepPin, StepFreeze, StepKill, StepThaw, StepVerify, StepCleanup, StepDone}},
		},
		{
			name: "both cgroups, frozen, graceful",
			plan: Plan{Target: "abc", Runtime: "cube", Sandbox: sb, RootPID: 10, Members: members, Cgroup: "/box/1", CgroupDir: "/x", Freezer: "/box/1", FreezerDir: "/y",
				Frozen: true, SupervisorNote: "supervisor gone", Grace: 5 * time.Second},
			want: Facts{Title: "sandbox abc", Runtime: "cube", Root: "pid 10 shim", Processes: 3, Zombies: 1,
				Cgroup: "/box/1 (dedicated: cgroup.kill); v1 freezer /box/1 (dedicated: thawed after the kill)",
				State:  "paused (frozen): thawed first, so SIGTERM can be handled", Supervisor: "gone", Cleanup: "nothing to remove",
				Strategy: "graceful: SIGTERM, 5s grace, then SIGKILL",
				Steps:    []Step{StepPin, StepThaw, StepTerm, StepWait, StepCgroupKill, StepThaw, StepVerify, StepCleanup, StepDone}},
		},
		{
			name: "no dedicated cgroup: the root's is not the sandbox's own",
			plan: Plan{Target: "abc", Runtime: "vm0", Sandbox: sb, RootPID: 10, Members: members, SupervisorNote: "supervisor gone"},
			want: Facts{Title: "sandbox abc", Runtime: "vm0", Root: "pid 10 shim", Processes: 3, Zombies: 1,
				Cgroup: "none dedicated (/box/1 is not the sandbox's own): SIGSTOP the tree, then SIGKILL each process", Supervisor: "gone", Cleanup: "nothing to remove",
				Strategy: "immediate SIGKILL", Steps: []Step{StepPin, StepStop, StepKill, StepVerify, StepCleanup, StepDone}},
		},
		{
			name: "paused by SIGSTOP, no freezer, graceful",
			plan: Plan{Target: "abc", Runtime: "podman", Sandbox: &model.Sandbox{ID: "abc", Paused: true}, RootPID: 10, Members: members, SupervisorNote: "supervisor gone", Grace: 5 * time.Second},
			want: Facts{Title: "sandbox abc", Runtime: "podman", Root: "pid 10 shim", Processes: 3, Zombies: 1,
				Cgroup: "none dedicated (/box/1 is not the sandbox's own): SIGSTOP the tree, then SIGKILL each process",
				State:  "paused (stopped by SIGSTOP): each SIGTERM is followed by SIGCONT, so it can be handled", Supervisor: "gone", Cleanup: "nothing to remove",
				Strategy: "graceful: SIGTERM, 5s grace, then SIGKILL", Steps: []Step{StepPin, StepTerm, StepWait, StepStop, StepKill, StepVerify, StepCleanup, StepDone}},
		},
		{
			name: "a process subtree",
			plan: Plan{Target: "pid 10", Runtime: "-", RootPID: 10, Members: members, SupervisorNote: "a process subtree has no supervisor"},
			want: Facts{Title: "pid 10 and its descendants", Runtime: "-", Root: "pid 10 shim", Processes: 3, Zombies: 1,
				Cgroup: "none: a process subtree owns no cgroup; SIGSTOP the tree, then SIGKILL each process", Supervisor: "a process subtree has no supervisor",
				Cleanup: "nothing to remove", Strategy: "immediate SIGKILL", Steps: []Step{StepPin, StepStop, StepKill, StepVerify, StepCleanup, StepDone}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.plan.Facts()
			if !slices.Equal(got.Steps, tc.want.Steps) || !slices.Equal(got.CleanupPaths, tc.want.CleanupPaths) {
				t.Errorf("steps %v cleanup %v, want %v %v", got.Steps, got.CleanupPaths, tc.want.Steps, tc.want.CleanupPaths)
			}
			got.Steps, got.CleanupPaths, tc.want.Steps, tc.want.CleanupPaths = nil, nil, nil, nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("facts\n%+v\nwant\n%+v", got, tc.want)
			}
			// The CLI's plan says each fact in the same words.
			var b bytes.Buffer
			tc.plan.Write(&b)
			f := tc.plan.Facts()
			for _, s := range []string{f.Title, f.Root, f.Cgroup, f.Supervisor, f.Cleanup, f.Strategy, f.StepsText(), f.State} {
				if !strings.Contains(b.String(), s) {
					t.Errorf("Write lacks %q:\n%s", s, b.String())
				}
			}
		})
	}
}

func TestPlanRoot(t *testing.T) {
	p := Plan{Members: []Member{{Identity: proc.Identity{PID: 3}}, {Identity: proc.Identity{PID: 2}}, {Identity: proc.Identity{PID: 1}}}}
	if got := p.Root().PID; got != 1 {
		t.Errorf("Root() = pid %d, want the last member, 1", got)
	}
	if got := (&Plan{}).Root(); got != (Member{}) {
		t.Errorf("Root() of an empty plan = %+v", got)
	}
	if got := (Facts{Processes: 1, Zombies: 1}).ProcessesText(); got != "1 process (1 zombie)" {
		t.Errorf("ProcessesText = %q", got)
	}
}
