package model

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
)

// pr builds a fake process; argv is split on spaces.
func pr(pid, ppid int, argv string, opts ...modeltest.Opt) *proc.Process {
	defaults := func(p *proc.Process) { p.Start, p.Cgroup = uint64(1000+pid), "/" }
	return modeltest.Proc(pid, ppid, argv, append([]modeltest.Opt{defaults}, opts...)...)
}

var (
	pgid    = modeltest.PGID
	state   = modeltest.State
	cgroup  = modeltest.Cgroup
	freezer = modeltest.Freezer
	cwd     = modeltest.Cwd
	start   = modeltest.Start
	kernel  = modeltest.Kernel
)

// snap assembles a snapshot; pid 1 (the machine agent, whose argv mentions
// firecracker) and pid 2 (kthreadd) are always present, and sandtop is 900.
func snap(procs ...*proc.Process) *proc.Snapshot {
	base := []*proc.Process{
		pr(1, 0, "/process_api --firecracker-init --addr 0.0.0.0:2024"),
		pr(2, 0, "", kernel()),
		pr(900, 1, "sandtop list"),
	}
	return modeltest.Snapshot(proc.Snapshot{
		Time: time.Unix(1_700_000_000, 0), BootTime: time.Unix(1_600_000_000, 0), ClockTicks: 100,
		Hostname: "host", Self: 900,
		Cgroups: map[string]proc.CgroupState{}, Freezers: map[string]proc.CgroupState{}, Listeners: map[string]bool{},
	}, append(base, procs...)...)
}

var (
	vm0Rule = &Rule{
		Name:         "vm0",
		Exe:          regexp.MustCompile(`(^|/)firecracker$`),
		Argv:         regexp.MustCompile(`--api-sock /run/vm0/sock/(?P<id>[^/ ]+)/`),
		Cwd:          regexp.MustCompile(`^(?P<base>.+)/workspaces/(?P<id>[^/]+)$`),
		ProcessGroup: true,
		Supervisor:   Supervisor{Ancestor: regexp.MustCompile(`(^|/)runner (start|benchmark)\b`)},
		Cleanup:      []string{"{base}/workspaces/{id}", "/run/vm0/sock/{id}"},
	}
	// dockerShimRule and shimRule name the namespace, as the presets do;
	// dockerRule finds the same container by its cgroup, without one.
	dockerShimRule = &Rule{
		Name:          "docker",
		Exe:           regexp.MustCompile(`containerd-shim-[a-z0-9]+-v[0-9]+$`),
		Argv:          regexp.MustCompile(`-namespace moby `),
		Flag:          "-id",
		NamespaceFlag: "-namespace",
		Supervisor:    Supervisor{SocketFlag: "-address"},
	}
	shimRule = &Rule{
		Name:          "containerd",
		Exe:           regexp.MustCompile(`containerd-shim-[a-z0-9]+-v[0-9]+$`),
		Flag:          "-id",
		NamespaceFlag: "-namespace",
		Supervisor:    Supervisor{SocketFlag: "-address"},
	}
	// vm0SockRule is the api-sock-only form: no cwd, so no {base}.
	vm0SockRule = &Rule{
		Name:         "vm0",
		Exe:          vm0Rule.Exe,
		Argv:         vm0Rule.Argv,
		ProcessGroup: true,
		Cleanup:      vm0Rule.Cleanup,
	}
	// halfRule has an optional capture: when it does not participate, the
	// template using it must be dropped, not expanded to a shorter path.
	halfRule = &Rule{
		Name:    "half",
		Argv:    regexp.MustCompile(`^halfexp (?P<id>\S+)(?: base=(?P<base>\S+))?`),
		Cleanup: []string{"{base}/x/{id}", "/run/half/{id}"},
	}
	podRule    = &Rule{Name: "pod", Cgroup: regexp.MustCompile(`(^|/)pod(?P<id>[0-9a-f-]+)(?:/|$)`)}
	boxRule    = &Rule{Name: "box", Cgroup: regexp.MustCompile(`(^|/)box/(?P<id>[A-Za-z0-9_-]+)$`)}
	dockerRule = &Rule{Name: "docker", Cgroup: regexp.MustCompile(`(^|/)docker-(?P<id>[0-9a-f]{64})\.scope$`)}
	argRule    = &Rule{Name: "sim", Argv: regexp.MustCompile(`^sim --sandbox (?P<id>\S+)`)}
	rules      = Rules{vm0Rule, dockerShimRule, shimRule, podRule, boxRule, dockerRule, argRule, vm0SockRule, halfRule}
)

const vmID = "7d1e2c3a-1111-4a4a-9b9b-0123456789ab"

func vm0Chain(runnerPPID int) []*proc.Process {
	ps := []*proc.Process{
		pr(101, 100, "sudo ip netns exec ns1 sudo -u vm firecracker", pgid(101)),
		pr(102, 101, "ip netns exec ns1 sudo -u vm firecracker", pgid(101)),
		pr(103, 102, "sudo -u vm firecracker", pgid(101)),
		pr(104, 103, "firecracker --api-sock /run/vm0/sock/"+vmID+"/api.sock", pgid(101), cwd("/var/lib/vm0/workspaces/"+vmID)),
		pr(105, 104, "fc_vcpu helper", pgid(101)),
	}
	if runnerPPID >= 0 {
		ps = append(ps, pr(100, runnerPPID, "/usr/bin/runner start --config /etc/vm0/runner.yaml"))
	} else {
		ps[0].PPID = 50
		ps = append(ps, pr(50, 1, "sandsim fleet"))
	}
	return ps
}

func pids(ms []*Member) []int {
	var out []int
	for _, m := range ms {
		out = append(out, m.PID)
	}
	return out
}

func TestBuild(t *testing.T) {
	const boxID = "b0x4Ab9Cd1Ef"
	tests := []struct {
		name  string
		snap  *proc.Snapshot
		check func(t *testing.T, v *View)
	}{
		{
			name: "vm0 chain in one process group with live runner",
			snap: snap(vm0Chain(1)...),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, vmID)
				wantPIDs(t, sb, 101, 102, 103, 104, 105)
				if sb.Root.PID != 101 || sb.Supervisor == nil || sb.Supervisor.PID != 100 {
					t.Errorf("root %d supervisor %v, want 101 and runner 100", sb.Root.PID, sb.Supervisor)
				}
				wantBadges(t, sb)
				if sb.Runtime != "vm0" || sb.Vars["base"] != "/var/lib/vm0" {
					t.Errorf("runtime %q vars %v", sb.Runtime, sb.Vars)
				}
				wantStrings(t, "cleanup", sb.Cleanup, "/var/lib/vm0/workspaces/"+vmID, "/run/vm0/sock/"+vmID)
				if v.SandboxOf(proc.Identity{PID: 100, Start: 1100}) != nil {
					t.Error("the runner must not be a member of the sandbox it supervises")
				}
			},
		},
		{
			name: "vm0 orphan: runner gone, chain re-parented to a subreaper",
			snap: snap(vm0Chain(-1)...),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, vmID)
				wantBadges(t, sb, BadgeOrphan)
				if sb.Supervisor != nil || !strings.Contains(sb.SupervisorNote, "no ancestor") {
					t.Errorf("supervisor %v note %q", sb.Supervisor, sb.SupervisorNote)
				}
			},
		},
		{
			name: "socket supervisor listening, and shim children inherit",
			snap: func() *proc.Snapshot {
				s := snap(
					pr(200, 1, "/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id abc123def456 -address /run/containerd/containerd.sock"),
					pr(201, 200, "/pause"),
					pr(202, 200, "nginx: master"),
					pr(203, 202, "nginx: worker"),
				)
				s.Listeners["/run/containerd/containerd.sock"] = true
				return s
			}(),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, "abc123def456")
				wantPIDs(t, sb, 200, 201, 202, 203)
				wantBadges(t, sb)
				if d := sb.Members[3].Depth; d != 2 {
					t.Errorf("worker depth %d, want 2", d)
				}
			},
		},
		{
			name: "socket supervisor gone is an orphan; PPID 1 alone is not",
			snap: snap(pr(200, 1, "/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id=abc123def456 -address unix:///run/containerd/containerd.sock")),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, "abc123def456")
				wantBadges(t, sb, BadgeOrphan)
				if sb.SupervisorNote != "supervisor gone: nothing listens on /run/containerd/containerd.sock" {
					t.Errorf("note %q", sb.SupervisorNote)
				}
			},
		},
		{
			name: "zombies counted, all-zombie sandbox is dead",
			snap: snap(
				pr(300, 1, "sim --sandbox zz-one"), pr(301, 300, "", state('Z')), pr(302, 300, "", state('Z')),
				pr(310, 1, "sim --sandbox zz-dead", state('Z')),
			),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, "zz-one")
				if sb.Zombies != 2 || sb.Dead {
					t.Errorf("zombies %d dead %v", sb.Zombies, sb.Dead)
				}
				wantBadges(t, sb, BadgeZombie)
				if d := one(t, v, "zz-dead"); !d.Dead {
					t.Error("sandbox of only zombies should be dead")
				}
			},
		},
		{
			name: "paused by frozen v2 cgroup, by v1 freezer, by SIGSTOP",
			snap: func() *proc.Snapshot {
				s := snap(
					pr(400, 1, "sim --sandbox frozen-v2", cgroup("/sim/frozen-v2")), pr(401, 400, "x", cgroup("/sim/frozen-v2")),
					pr(410, 1, "sim --sandbox frozen-v1", freezer("/sim/frozen-v1")),
					pr(420, 1, "sim --sandbox stopped", state('T')), pr(421, 420, "x", state('t')), pr(422, 420, "", state('Z')),
					pr(430, 1, "sim --sandbox half", state('T')), pr(431, 430, "x"),
				)
				s.Cgroups["/sim/frozen-v2"] = proc.CgroupState{Frozen: true, Exists: true, Populated: true}
				s.Freezers["/sim/frozen-v1"] = proc.CgroupState{Frozen: true, Exists: true}
				return s
			}(),
			check: func(t *testing.T, v *View) {
				for _, id := range []string{"frozen-v2", "frozen-v1"} {
					if sb := one(t, v, id); !sb.Frozen || !sb.Paused {
						t.Errorf("%s: frozen %v paused %v", id, sb.Frozen, sb.Paused)
					}
				}
				wantBadges(t, one(t, v, "stopped"), BadgeZombie, BadgePaused)
				wantBadges(t, one(t, v, "half"))
				if sb := one(t, v, "frozen-v2"); sb.Cgroup != "/sim/frozen-v2" {
					t.Errorf("cgroup %q should be dedicated", sb.Cgroup)
				}
			},
		},
		{
			name: "a zombie's cgroup does not spoil the live members' dedicated freezer",
			snap: func() *proc.Snapshot {
				s := snap(
					pr(450, 1, "sim --sandbox zombie-freezer", freezer("/pool/zombie-freezer")),
					pr(451, 450, "", state('Z'), freezer("/")),
				)
				s.Freezers["/pool/zombie-freezer"] = proc.CgroupState{Frozen: true, Exists: true}
				return s
			}(),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, "zombie-freezer")
				if sb.Freezer != "/pool/zombie-freezer" || !sb.Frozen {
					t.Errorf("freezer %q frozen %v, want dedicated /pool/zombie-freezer, frozen", sb.Freezer, sb.Frozen)
				}
			},
		},
		{
			name: "dedicated cgroup named by the ID claims an escaped double-forked child",
			snap: snap(
				pr(500, 1, "bwrap --bind /home/u/.boxlite/boxes/"+boxID, cgroup("/boxlite/"+boxID)),
				pr(501, 500, "sim --sandbox "+boxID, cgroup("/boxlite/"+boxID)),
				pr(502, 501, "vm", cgroup("/boxlite/"+boxID+"/inner")),
				pr(510, 1, "escaped-daemon", cgroup("/boxlite/"+boxID)),
				pr(511, 510, "its-child", cgroup("/boxlite/"+boxID)),
			),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, boxID)
				wantPIDs(t, sb, 500, 501, 502, 510, 511)
				if sb.Cgroup != "/boxlite/"+boxID {
					t.Errorf("cgroup %q, want dedicated /boxlite/%s", sb.Cgroup, boxID)
				}
				byPID := members(sb)
				if m := byPID[510]; m.Via != ViaCgroup || !m.Escaped {
					t.Errorf("escaped child via %v escaped %v, want cgroup and escaped", m.Via, m.Escaped)
				}
				if m := byPID[511]; m.Via != ViaCgroup || m.Escaped || m.Depth != 1 {
					t.Errorf("escaped grandchild via %v escaped %v depth %d", m.Via, m.Escaped, m.Depth)
				}
				if sb.Root.PID != 500 {
					t.Errorf("root %d, want 500", sb.Root.PID)
				}
				// An escaped child is not a lost supervisor.
				if sb.Escaped != 1 || sb.Orphan {
					t.Errorf("escaped %d orphan %v, want 1 and no orphan", sb.Escaped, sb.Orphan)
				}
				wantBadges(t, sb)
			},
		},
		{
			name: "a cgroup rule claims its cgroup even when the ID is not in the path",
			snap: snap(
				pr(550, 1, "init", cgroup("/box/short")),
				pr(551, 1, "stray", cgroup("/box/short")),
			),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, "short")
				wantPIDs(t, sb, 550, 551)
				if sb.Cgroup != "/box/short" {
					t.Errorf("cgroup %q", sb.Cgroup)
				}
			},
		},
		{
			name: "a bystander sharing an unnamed cgroup: not dedicated, bystander untouched",
			snap: snap(
				pr(600, 1, "sim --sandbox shared-one", cgroup("/pool/7")),
				pr(601, 600, "child", cgroup("/pool/7")),
				pr(610, 1, "bystander", cgroup("/pool/7")),
			),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, "shared-one")
				wantPIDs(t, sb, 600, 601)
				if sb.Cgroup != "" {
					t.Errorf("cgroup %q must not be dedicated: a bystander lives in it", sb.Cgroup)
				}
				if v.SandboxOf(proc.Identity{PID: 610, Start: 1610}) != nil {
					t.Error("bystander attributed")
				}
			},
		},
		{
			name: "a cgroup holding another sandbox is not dedicated",
			snap: snap(
				pr(700, 1, "sim --sandbox outer-sandbox", cgroup("/outer-sandbox")),
				pr(701, 1, "sim --sandbox inner-sandbox", cgroup("/outer-sandbox/inner-sandbox")),
			),
			check: func(t *testing.T, v *View) {
				if c := one(t, v, "outer-sandbox").Cgroup; c != "" {
					t.Errorf("outer cgroup %q", c)
				}
				if c := one(t, v, "inner-sandbox").Cgroup; c != "/outer-sandbox/inner-sandbox" {
					t.Errorf("inner cgroup %q", c)
				}
			},
		},
		{
			name: "PID 1, sandtop itself and kernel threads are never members",
			snap: func() *proc.Snapshot {
				s := snap(pr(800, 2, "firecracker --api-sock /run/vm0/sock/kthread-like/x", kernel()))
				s.Proc(1).Argv = []string{"firecracker", "--api-sock", "/run/vm0/sock/pid-one/api.sock"}
				s.Proc(900).Argv = []string{"sim", "--sandbox", "sandtop-self"}
				return s
			}(),
			check: func(t *testing.T, v *View) {
				if len(v.Sandboxes) != 0 {
					t.Errorf("sandboxes %v, want none", v.Sandboxes[0].ID)
				}
				if got := len(v.Unattributed); got != 2 {
					t.Errorf("unattributed %d, want 2 (pid 1 and sandtop; kernel threads excluded)", got)
				}
			},
		},
		{
			name: "two rules of one runtime yielding one ID make one sandbox",
			snap: snap(
				pr(1000, 1, "/usr/bin/containerd-shim-runc-v2 -namespace moby -id mergeid0001 -address /x.sock"),
				pr(1001, 1000, "nginx", cgroup("/system.slice/docker-mergeid0001.scope")),
				pr(1002, 1, "/usr/bin/containerd-shim-runc-v2 -namespace moby -id "+strings.Repeat("ab", 32)+" -address /x.sock"),
				pr(1003, 1, "nginx", cgroup("/system.slice/docker-"+strings.Repeat("ab", 32)+".scope")),
			),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, "mergeid0001")
				wantPIDs(t, sb, 1000, 1001)
				sb = one(t, v, strings.Repeat("ab", 32))
				wantPIDs(t, sb, 1002, 1003)
				if sb.Runtime != "docker" || sb.Namespace != "moby" || sb.Rule != dockerShimRule || sb.Name() != "moby/"+strings.Repeat("ab", 32) {
					t.Errorf("runtime %q namespace %q rule %v name %q: want the shim's (the earlier rule)", sb.Runtime, sb.Namespace, sb.Rule.Name, sb.Name())
				}
			},
		},
		{
			name: "two runtimes with the same ID are two sandboxes",
			snap: snap(
				pr(1000, 1, "/usr/bin/containerd-shim-runc-v2 -namespace default -id same-id-01 -address /x.sock"),
				pr(1001, 1000, "sh"),
				pr(1010, 1, "sim --sandbox same-id-01"),
				pr(1011, 1010, "sh"),
			),
			check: func(t *testing.T, v *View) {
				if len(v.Sandboxes) != 2 {
					t.Fatalf("%d sandboxes, want 2", len(v.Sandboxes))
				}
				wantPIDs(t, one(t, v, "containerd:default/same-id-01"), 1000, 1001)
				wantPIDs(t, one(t, v, "sim:same-id-01"), 1010, 1011)
				if v.Sandbox("same-id-01") != nil {
					t.Error("a bare ID that two sandboxes share named one of them")
				}
			},
		},
		{
			name: "the same container ID in two containerd namespaces is two sandboxes, each with its cgroup",
			snap: snap(
				pr(1000, 1, "/usr/bin/containerd-shim-runc-v2 -namespace team-a -id web-frontend -address /x.sock"),
				pr(1001, 1000, "sleep 1001", cgroup("/team-a/web-frontend")),
				pr(1002, 1001, "sleep 1000", cgroup("/team-a/web-frontend")),
				pr(1010, 1, "/usr/bin/containerd-shim-runc-v2 -namespace team-b -id web-frontend -address /x.sock"),
				pr(1011, 1010, "sleep 1002", cgroup("/team-b/web-frontend")),
				pr(1020, 1, "/usr/bin/containerd-shim-runc-v2 -namespace team-a -id w3b34 -address /x.sock"),
				pr(1021, 1020, "sleep 1003", cgroup("/team-a/w3b34")),
			),
			check: func(t *testing.T, v *View) {
				if len(v.Sandboxes) != 3 {
					t.Fatalf("%d sandboxes, want 3", len(v.Sandboxes))
				}
				a, b := one(t, v, "team-a/web-frontend"), one(t, v, "team-b/web-frontend")
				wantPIDs(t, a, 1000, 1001, 1002)
				wantPIDs(t, b, 1010, 1011)
				short := one(t, v, "team-a/w3b34")
				wantPIDs(t, short, 1020, 1021)
				for _, sb := range []*Sandbox{a, b, short} {
					if want := "/" + sb.Namespace + "/" + sb.ID; sb.Cgroup != want {
						t.Errorf("%s: cgroup %q, want %q (dedicated whatever the ID's length)", sb.Name(), sb.Cgroup, want)
					}
					wantBadges(t, sb, BadgeOrphan) // nothing listens on /x.sock
				}
				if a.Key() != "containerd:team-a/web-frontend" {
					t.Errorf("key %q", a.Key())
				}
			},
		},
		{
			name: "a process group that holds sandtop is never pulled in",
			snap: func() *proc.Snapshot {
				s := snap(
					pr(1100, 1, "bash", pgid(1100)),
					pr(1101, 1100, "firecracker --api-sock /run/vm0/sock/shellvm/api.sock", pgid(1100)),
				)
				s.Proc(900).PGID = 1100
				return s
			}(),
			check: func(t *testing.T, v *View) {
				wantPIDs(t, one(t, v, "shellvm"), 1101)
			},
		},
		{
			name: "a parent cycle among members (a skewed snapshot) keeps every member",
			snap: snap(
				pr(1600, 1602, "sim --sandbox cycle-one"),
				pr(1601, 1600, "a"),
				pr(1602, 1601, "b"),
				pr(1603, 1602, "c"),
			),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, "cycle-one")
				wantPIDs(t, sb, 1600, 1601, 1602, 1603)
				if sb.Root.PID != 1600 || sb.Root.Parent != nil || len(sb.Members[3].Children) != 0 {
					t.Errorf("root %d, parent %v: the cycle must be cut at its lowest pid", sb.Root.PID, sb.Root.Parent)
				}
			},
		},
		{
			name: "half-expanded and unsafe cleanup paths are dropped",
			snap: snap(
				pr(1200, 1, "firecracker --api-sock /run/vm0/sock/nocwd/api.sock"),
				pr(1210, 1, "halfexp h-one"),
				pr(1220, 1, "halfexp h-two base=/srv"),
				pr(1230, 1, "halfexp .. base=/srv"),
			),
			check: func(t *testing.T, v *View) {
				wantStrings(t, "cleanup", one(t, v, "nocwd").Cleanup, "/run/vm0/sock/nocwd")
				wantStrings(t, "cleanup", one(t, v, "h-one").Cleanup, "/run/half/h-one")
				wantStrings(t, "cleanup", one(t, v, "h-two").Cleanup, "/srv/x/h-two", "/run/half/h-two")
				wantStrings(t, "cleanup", one(t, v, "..").Cleanup)
			},
		},
	}
	const (
		ctr  = "41cb92475d2d2b8b93befe133d6df302c08482e3f4bd1eae219b46e580b673e9"
		sbID = "9a0b8c7d6e5f40312233445566778899aabbccddeeff00112233445566778899"
	)
	docker := "/system.slice/docker-" + ctr + ".scope"
	tests = append(tests, []struct {
		name  string
		snap  *proc.Snapshot
		check func(t *testing.T, v *View)
	}{
		{
			name: "a container's scope is dedicated though its shim lives in containerd's cgroup",
			snap: snap(
				pr(1290, 1, "containerd", cgroup("/system.slice/containerd.service")),
				pr(1300, 1, "/usr/bin/containerd-shim-runc-v2 -namespace moby -id "+ctr+" -address /x.sock", cgroup("/system.slice/containerd.service")),
				pr(1301, 1300, "nginx", cgroup(docker)),
				pr(1302, 1301, "nginx-worker", cgroup(docker)),
				pr(1310, 1, "escaped-daemon", cgroup(docker)),
			),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, ctr)
				wantPIDs(t, sb, 1300, 1301, 1302, 1310)
				if sb.Cgroup != docker {
					t.Errorf("cgroup %q, want the container's scope", sb.Cgroup)
				}
				if v.SandboxOf(proc.Identity{PID: 1290, Start: 2290}) != nil {
					t.Error("containerd itself was attributed")
				}
			},
		},
		{
			name: "a pod's shim, named by the pause container's scope, folds into the pod",
			snap: func() *proc.Snapshot {
				s := snap(
					pr(1400, 1, "containerd-shim-runc-v2 -namespace k8s.io -id "+sbID+" -address /x.sock", cgroup("/system.slice/containerd.service")),
					pr(1401, 1400, "/pause", cgroup("/kubepods/pod1234abcd-0000/"+sbID)),
					pr(1402, 1400, "app", cgroup("/kubepods/pod1234abcd-0000/"+ctr)),
				)
				s.Listeners["/x.sock"] = true
				return s
			}(),
			check: func(t *testing.T, v *View) {
				if len(v.Sandboxes) != 1 {
					t.Fatalf("%d sandboxes, want one pod", len(v.Sandboxes))
				}
				sb := one(t, v, "1234abcd-0000")
				wantPIDs(t, sb, 1400, 1401, 1402)
				wantStrings(t, "aliases", sb.Aliases, sbID)
				if sb.Runtime != "pod" || sb.Cgroup != "/kubepods/pod1234abcd-0000" || !sb.Supervised {
					t.Errorf("runtime %q cgroup %q supervised %v (%s)", sb.Runtime, sb.Cgroup, sb.Supervised, sb.SupervisorNote)
				}
				if got, err := v.Resolve(sbID); err != nil || got != sb {
					t.Errorf("Resolve(pod sandbox ID) = %v, %v", got, err)
				}
				wantBadges(t, sb)
			},
		},
		{
			name: "a container process adopted by the shim's own parent (a subreaper) has escaped",
			snap: snap(
				pr(1500, 50, "/usr/bin/containerd-shim-runc-v2 -namespace moby -id "+ctr+" -address /x.sock", cgroup("/system.slice/containerd.service")),
				pr(1501, 1500, "nginx", cgroup(docker)),
				pr(1510, 50, "escaped-daemon", cgroup(docker)),
				pr(50, 1, "subreaper"),
			),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, ctr)
				ms := members(sb)
				if !ms[1510].Escaped || ms[1501].Escaped || ms[1500].Escaped {
					t.Errorf("escaped flags: escaped %v, init %v, shim %v", ms[1510].Escaped, ms[1501].Escaped, ms[1500].Escaped)
				}
				// Nothing listens on /x.sock: the supervisor is gone.
				wantBadges(t, sb, BadgeOrphan)
			},
		},
		{
			name: "a healthy container with an escaped child is no orphan",
			snap: listening(snap(
				pr(1500, 1, "/usr/bin/containerd-shim-runc-v2 -namespace moby -id "+ctr+" -address /x.sock", cgroup("/system.slice/containerd.service")),
				pr(1501, 1500, "nginx", cgroup(docker)),
				pr(1510, 1, "escaped-daemon", cgroup(docker)),
			), "/x.sock"),
			check: func(t *testing.T, v *View) {
				sb := one(t, v, ctr)
				if !members(sb)[1510].Escaped || sb.Escaped != 1 {
					t.Errorf("the double-forked child is not counted as escaped (%d)", sb.Escaped)
				}
				if sb.Orphan || !sb.Supervised || sb.SupervisorNote != "supervisor listens on /x.sock" {
					t.Errorf("orphan %v supervised %v (%s), want supervised", sb.Orphan, sb.Supervised, sb.SupervisorNote)
				}
				wantBadges(t, sb)
			},
		},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, Build(tc.snap, rules, nil))
		})
	}
}

func TestBuildSticky(t *testing.T) {
	first := snap(pr(300, 1, "sim --sandbox sticky-one"), pr(301, 300, "worker"), pr(302, 301, "grandchild"))
	v1 := Build(first, rules, nil)
	wantPIDs(t, one(t, v1, "sticky-one"), 300, 301, 302)

	t.Run("a member whose tree died stays while its identity lives", func(t *testing.T) {
		second := snap(pr(301, 1, "worker"), pr(302, 301, "grandchild"), pr(303, 301, "new child"))
		v2 := Build(second, rules, v1)
		sb := one(t, v2, "sticky-one")
		wantPIDs(t, sb, 301, 302, 303)
		if m := members(sb)[301]; m.Via != ViaSticky {
			t.Errorf("via %v, want sticky", m.Via)
		}
	})
	t.Run("a recycled pid is a different process", func(t *testing.T) {
		second := snap(pr(301, 1, "worker", start(99999)))
		v2 := Build(second, rules, v1)
		if len(v2.Sandboxes) != 0 {
			t.Errorf("pid 301 with a new start time joined %s", v2.Sandboxes[0].ID)
		}
	})
}

func TestBuilderRemembersMatchesPerIdentity(t *testing.T) {
	b := NewBuilder(rules)
	s := snap(pr(300, 1, "sim --sandbox memo-one"))
	b.Build(s, nil)
	// pid 1, sandtop and kernel threads are excluded before matching.
	if b.remembered() != 1 {
		t.Fatalf("remembered %d matches, want 1", b.remembered())
	}
	// execve keeps the identity but changes comm and argv: the memo must not
	// survive it.
	s2 := snap(pr(300, 1, "sim --sandbox memo-two"))
	s2.Proc(300).Comm = "sim2"
	v := b.Build(s2, nil)
	one(t, v, "memo-two")
	// A departed identity is forgotten.
	b.Build(snap(), nil)
	if b.remembered() != 0 {
		t.Errorf("remembered %d matches after every process left", b.remembered())
	}
}

func TestCommonCgroup(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"/a/b/c", "/a/b/d", "/a/b"},
		{"/a/b", "/a/b/c", "/a/b"},
		{"/a/bc", "/a/b", "/a"},
		{"/x", "/y", "/"},
		{"/a", "/a", "/a"},
		{"", "/a/b", "/a/b"},
	} {
		if got := commonCgroup(tc.a, tc.b); got != tc.want {
			t.Errorf("commonCgroup(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func one(t *testing.T, v *View, id string) *Sandbox {
	t.Helper()
	sb := v.Sandbox(id)
	if sb == nil {
		var ids []string
		for _, s := range v.Sandboxes {
			ids = append(ids, s.ID)
		}
		t.Fatalf("no sandbox %q; have %v", id, ids)
	}
	return sb
}

func members(sb *Sandbox) map[int]*Member {
	out := map[int]*Member{}
	for _, m := range sb.Members {
		out[m.PID] = m
	}
	return out
}

func wantPIDs(t *testing.T, sb *Sandbox, want ...int) {
	t.Helper()
	if got := pids(sb.Members); !slices.Equal(got, want) {
		t.Errorf("%s members %v, want %v", sb.ID, got, want)
	}
}

// listening marks the socket paths as listened on in s.
func listening(s *proc.Snapshot, paths ...string) *proc.Snapshot {
	for _, p := range paths {
		s.Listeners[p] = true
	}
	return s
}

func wantBadges(t *testing.T, sb *Sandbox, want ...Badge) {
	t.Helper()
	if !slices.Equal(sb.Badges, want) {
		t.Errorf("%s badges %v, want %v", sb.ID, sb.Badges, want)
	}
}

func wantStrings(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s %q, want %q", what, got, want)
	}
}

// TestBuildMatchesAlikeOnce: Build matches each set of match inputs once
// and hands the match to every process that has it; processes that differ
// in anything a rule reads (how argv splits into arguments, a nested pid
// namespace, the cgroup) are matched each on their own, and the view is
// the one a Builder, which matches each identity, makes.
func TestBuildMatchesAlikeOnce(t *testing.T) {
	rules := Effective(nil, true)
	const shim = "/usr/bin/containerd-shim-runc-v2 -namespace moby -id "
	split := pr(110, 1, "x")
	split.Argv = []string{shim + "aaaa1111 -address /run/c.sock"} // the same words, one argument
	split.Comm = "containerd-shim-runc-v2"
	s := snap(
		pr(100, 1, shim+"aaaa1111 -address /run/c.sock"),
		split,
		pr(120, 1, "sleep infinity", cgroup("/k8s.io/box1"), modeltest.NSpid(120, 1)),
		pr(121, 1, "sleep infinity", cgroup("/k8s.io/box1"), modeltest.NSpid(121, 2)),
		// Matched first, the process outside a pid namespace of its own
		// must not pass its no-match on to the one inside.
		pr(130, 1, "sleep infinity", cgroup("/k8s.io/box3")),
		pr(131, 1, "sleep infinity", cgroup("/k8s.io/box3"), modeltest.NSpid(131, 1)),
	)
	got, want := Build(s, rules, nil), NewBuilder(rules).Build(s, nil)
	if g, w := dumpView(got), dumpView(want); g != w {
		t.Fatalf("Build:\n%s\nBuilder:\n%s", g, w)
	}
	// The same with the matching spread over goroutines, two processes
	// each.
	defer func(n int) { prematchPerWorker = n }(prematchPerWorker)
	prematchPerWorker = 2
	if g, w := dumpView(Build(s, rules, nil)), dumpView(want); g != w {
		t.Fatalf("Build, matching in parallel:\n%s\nBuilder:\n%s", g, w)
	}
	in := func(pid int) string {
		if sb := got.SandboxOf(s.Proc(pid).ID()); sb != nil {
			return sb.Key()
		}
		return ""
	}
	for pid, want := range map[int]string{
		100: "docker:moby/aaaa1111", 110: "", 120: "containerd:k8s.io/box1", 121: "containerd:k8s.io/box1",
		130: "containerd:k8s.io/box3", 131: "containerd:k8s.io/box3",
	} {
		if k := in(pid); k != want {
			t.Errorf("pid %d in %q, want %q", pid, k, want)
		}
	}
}

// remembered counts the identities b holds a match memo for.
func (b *Builder) remembered() int {
	n := 0
	if b.last != nil {
		for _, m := range b.last.memos {
			if m.p != nil {
				n++
			}
		}
	}
	return n
}

// TestSharedVarsStayUnwritten: the Builder shares one Vars map between the
// matches of many processes, and a sandbox starts out with its first
// match's map. A sandbox that gains a capture from another match (one that
// names a slot, or a sandbox merged into it) must copy the map first:
// written through, the capture would stick to the shared match, and a
// later Build would give it to a sandbox whose processes no longer have it.
func TestSharedVarsStayUnwritten(t *testing.T) {
	rs := Rules{
		{Name: "box", Argv: regexp.MustCompile(`^boxd --id (?P<id>\S+)`)},
		{Name: "box", Cgroup: regexp.MustCompile(`^/box/(?P<id>[^/]+)/(?P<slot>[^/]+)$`)},
	}
	daemon := pr(300, 1, "boxd --id aaaa1111aaaa", cgroup("/daemons"))
	worker := pr(301, 1, "work", cgroup("/box/aaaa1111aaaa/slot7"))
	// A daemon whose cgroup names a sandbox that only a worker's cgroup
	// found: that one is merged into the daemon's, slot and all.
	daemon2 := pr(400, 1, "boxd --id cccc3333cccc", cgroup("/daemons/dddd4444dddd"))
	worker2 := pr(500, 1, "work", cgroup("/box/dddd4444dddd/slot9"))
	b := NewBuilder(rs)
	v := b.Build(snap(daemon, worker, daemon2, worker2), nil)
	for id, slot := range map[string]string{"aaaa1111aaaa": "slot7", "cccc3333cccc": "slot9"} {
		if sb := one(t, v, id); sb.Vars["slot"] != slot || sb.Vars["id"] != id {
			t.Errorf("vars %v, want id %s and slot %s", sb.Vars, id, slot)
		}
	}
	if sb := one(t, v, "cccc3333cccc"); !slices.Contains(sb.Aliases, "dddd4444dddd") {
		t.Fatalf("aliases %v: the merge this test needs did not happen", sb.Aliases)
	}
	for _, m := range b.shared {
		if m.Rule == rs[0] && len(m.Vars) != 1 {
			t.Errorf("a daemon's shared match has vars %v, want its own id only", m.Vars)
		}
	}
	// The workers leave: each daemon's sandbox is what its own match
	// captured, and nothing else.
	v = b.Build(snap(daemon, daemon2), nil)
	for _, id := range []string{"aaaa1111aaaa", "cccc3333cccc"} {
		if sb := one(t, v, id); len(sb.Vars) != 1 {
			t.Errorf("after the workers left, %s has vars %v, want the id only", id, sb.Vars)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, dir string
		want      bool
	}{
		{"/box", "/box", true},
		{"/box/ctr", "/box", true},
		{"/boxes", "/box", false},
		{"/box", "/box/ctr", false},
		{"/anything", "/", true},
		{"", "/box", false},
		{"/box", "", false},
	} {
		if got := within(tc.path, tc.dir); got != tc.want {
			t.Errorf("within(%q, %q) = %v, want %v", tc.path, tc.dir, got, tc.want)
		}
	}
	// Paths as long as a container's: a short concatenation would fit
	// the compiler's stack buffer anyway.
	dir := "/system.slice/docker-0123456789abcdef0123456789abcdef.scope"
	sub := dir + "/sub"
	var in bool
	if n := testing.AllocsPerRun(100, func() { in = within(sub, dir) }); n != 0 || !in {
		t.Errorf("within allocates %.0f times, want none", n)
	}
}
