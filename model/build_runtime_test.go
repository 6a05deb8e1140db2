package model

import (
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc"
)

// nspid puts a process in a child pid namespace, as a container's are.
func nspid(inner int) func(*proc.Process) {
	return func(p *proc.Process) { p.NSpid = []int{p.PID, inner} }
}

// The shapes below are what ps and /proc showed for the real runtimes
// (containerd 1.6.20, docker.io 20.10.24): see realrt_test.go in
// cmd/sandtop for the same checks against the runtimes themselves.
func TestBuildRealRuntimeShapes(t *testing.T) {
	ctr := strings.Repeat("c0ffee", 10) + "abcd"
	shim := func(pid int, ns, id string) *proc.Process {
		return pr(pid, 1, "/usr/bin/containerd-shim-runc-v2 -namespace "+ns+" -id "+id+" -address /run/ctrd.sock")
	}
	tests := []struct {
		name  string
		snap  *proc.Snapshot
		check func(t *testing.T, v *View)
	}{
		{
			name: "a containerd container whose shim died is a sandbox of its cgroup alone, an orphan",
			snap: snap(
				pr(1100, 1, "/bin/sh -c sleep", cgroup("/team-a/w3b34"), freezer("/team-a/w3b34"), nspid(1)),
				pr(1101, 1100, "sleep 1000", cgroup("/team-a/w3b34"), freezer("/team-a/w3b34"), nspid(6)),
			),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, "team-a/w3b34")
				wantPIDs(t, sb, 1100, 1101)
				if !sb.CgroupOnly || sb.Runtime != "containerd" || sb.Namespace != "team-a" || sb.Cgroup != "/team-a/w3b34" || sb.Freezer != "/team-a/w3b34" {
					t.Errorf("cgroup-only %v runtime %q ns %q cgroup %q freezer %q", sb.CgroupOnly, sb.Runtime, sb.Namespace, sb.Cgroup, sb.Freezer)
				}
				wantBadges(t, sb, BadgeOrphan)
				if !strings.Contains(sb.SupervisorNote, "root and supervisor gone") || !strings.Contains(sb.SupervisorNote, "/team-a/w3b34") {
					t.Errorf("note %q", sb.SupervisorNote)
				}
			},
		},
		{
			name: "with its shim alive the same container is one sandbox, not an orphan",
			snap: func() *proc.Snapshot {
				s := snap(
					shim(1090, "team-a", "w3b34"),
					pr(1100, 1090, "/bin/sh -c sleep", cgroup("/team-a/w3b34"), nspid(1)),
					pr(1101, 1100, "sleep 1000", cgroup("/team-a/w3b34"), nspid(6)),
				)
				s.Listeners["/run/ctrd.sock"] = true
				return s
			}(),
			check: func(t *testing.T, v *View) {
				if len(v.Sandboxes) != 1 {
					t.Fatalf("%d sandboxes, want 1", len(v.Sandboxes))
				}
				sb := one(t, v, "team-a/w3b34")
				wantPIDs(t, sb, 1090, 1100, 1101)
				if sb.CgroupOnly || sb.Cgroup != "/team-a/w3b34" || !sb.Supervised || sb.Rule.onlyCgroup() {
					t.Errorf("cgroup-only %v cgroup %q supervised %v rule %s", sb.CgroupOnly, sb.Cgroup, sb.Supervised, sb.Rule.Doc)
				}
				wantBadges(t, sb)
			},
		},
		{
			name: "a two-level cgroup of host processes is nobody's container",
			snap: snap(
				pr(1200, 1, "sleep 1", cgroup("/sandtop-test-1/sub")),
				pr(1201, 1, "sleep 1", cgroup("/system.slice/cron.service")),
			),
			check: func(t *testing.T, v *View) {
				if len(v.Sandboxes) != 0 {
					t.Errorf("sandboxes %v, want none", v.Sandboxes[0].Key())
				}
			},
		},
		{
			name: "Docker's shim (namespace moby) and its /docker/<id> cgroup make one sandbox; without the shim, an orphan",
			snap: func() *proc.Snapshot {
				other := strings.Repeat("d0d0", 16)
				s := snap(
					shim(1300, "moby", ctr),
					pr(1301, 1300, "nginx", cgroup("/docker/"+ctr), nspid(1)),
					pr(1310, 1, "nginx", cgroup("/docker/"+other), nspid(1)),
				)
				s.Listeners["/run/ctrd.sock"] = true
				return s
			}(),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, ctr)
				wantPIDs(t, sb, 1300, 1301)
				if sb.Runtime != "docker" || sb.Namespace != "moby" || sb.Cgroup != "/docker/"+ctr || sb.CgroupOnly {
					t.Errorf("runtime %q ns %q cgroup %q cgroup-only %v", sb.Runtime, sb.Namespace, sb.Cgroup, sb.CgroupOnly)
				}
				wantBadges(t, sb)
				if got := v.Sandbox("docker:" + ctr); got != sb {
					t.Errorf("the un-namespaced key finds %v", got)
				}
				lone := one(t, v, strings.Repeat("d0d0", 16))
				if !lone.CgroupOnly || lone.Namespace != "" {
					t.Errorf("shim-less docker container: cgroup-only %v ns %q", lone.CgroupOnly, lone.Namespace)
				}
				wantBadges(t, lone, BadgeOrphan)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, Build(tc.snap, Presets(), nil))
		})
	}
}

func TestMatchCgroup(t *testing.T) {
	rs := Presets()
	for _, tc := range []struct{ path, key string }{
		{"/team-a/w3b34", "containerd:team-a/w3b34"},
		{"/docker/" + strings.Repeat("ab", 32), "docker:" + strings.Repeat("ab", 32)},
		{"/boxlite/C3TD27sqAmOs", "boxlite:C3TD27sqAmOs"},
		{"/system.slice/cron.service/x/y", ""},
		{"/", ""},
	} {
		m, ok := rs.MatchCgroup(tc.path)
		if got := ""; ok {
			got = keyOf(m)
			if got != tc.key {
				t.Errorf("MatchCgroup(%q) = %s, want %q", tc.path, got, tc.key)
			}
		} else if tc.key != "" {
			t.Errorf("MatchCgroup(%q) found nothing, want %s", tc.path, tc.key)
		}
	}
}
