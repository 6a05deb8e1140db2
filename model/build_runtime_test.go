package model

import (
	"slices"
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

func TestPausedIsTheWorkload(t *testing.T) {
	const cg = "/team-a/w3b34"
	procs := func() []*proc.Process {
		return []*proc.Process{
			pr(1090, 1, "/usr/bin/containerd-shim-runc-v2 -namespace team-a -id w3b34 -address /run/ctrd.sock"),
			pr(1100, 1090, "sleep 100001", cgroup(cg), freezer(cg), nspid(1), state('D')),
			pr(1101, 1100, "sleep 100000", cgroup(cg), freezer(cg), nspid(6), state('D')),
		}
	}
	for _, tc := range []struct {
		name       string
		v1, v2     bool
		shimFrozen bool
		paused     bool
		note       string
	}{
		{name: "running"},
		{name: "ctr task pause: the v1 freezer of the container, not the shim", v1: true, paused: true, note: "workload frozen: 2 processes in /team-a/w3b34; 1 outside it"},
		{name: "v2 freeze of the container", v2: true, paused: true, note: "workload frozen: 2 processes"},
		{name: "everything frozen", v1: true, shimFrozen: true, paused: true, note: "frozen: all 3 processes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snap(procs()...)
			s.Listeners["/run/ctrd.sock"] = true
			s.Freezers[cg] = proc.CgroupState{Exists: true, Frozen: tc.v1}
			s.Cgroups[cg] = proc.CgroupState{Exists: true, Frozen: tc.v2}
			if tc.shimFrozen {
				s.Proc(1090).Cgroup, s.Cgroups["/shim"] = "/shim", proc.CgroupState{Exists: true, Frozen: true}
			}
			sb := one(t, Build(s, Presets(), nil), "team-a/w3b34")
			if sb.Paused != tc.paused || sb.Frozen != tc.paused || !strings.Contains(sb.PausedNote, tc.note) {
				t.Errorf("paused %v frozen %v note %q; want paused %v, note with %q", sb.Paused, sb.Frozen, sb.PausedNote, tc.paused, tc.note)
			}
			if tc.paused {
				wantBadges(t, sb, BadgePaused)
			}
		})
	}
}

func TestBuildPodmanRuncNspawn(t *testing.T) {
	id := "016f5d29bd3ad4d98a6a148692c7fd2020463ec4301b5a0fc43ac7eb8f9d0965"
	lib := "/libpod_parent/libpod-" + id
	// conmon's argv as podman 4.3.1 started it here (abridged in the middle).
	conmon := "/usr/bin/conmon --api-version 1 -c " + id + " -u " + id + " -r /usr/bin/runc -b /r/vfs-containers/" + id + "/userdata -p /rr/pidfile -n pod-test-1 --exit-dir /t/exits --full-attach -l k8s-file:/r/ctr.log --log-level warning --exit-command /usr/bin/podman --exit-command-arg --root --exit-command-arg /r --exit-command-arg --runroot --exit-command-arg /rr --exit-command-arg --log-level --exit-command-arg warning --exit-command-arg --cgroup-manager --exit-command-arg cgroupfs --exit-command-arg --tmpdir --exit-command-arg /t --exit-command-arg container --exit-command-arg cleanup --exit-command-arg " + id
	s := snap(
		pr(600, 1, conmon, cgroup("/"), freezer("/libpod_parent/conmon")),
		pr(601, 600, "sleep 100001", cgroup(lib), freezer(lib), nspid(1)),
		pr(602, 601, "sleep 100000", cgroup(lib), freezer(lib), nspid(6)),
		pr(700, 1, "sleep 100001", cgroup("/rcx1"), freezer("/rcx1"), nspid(1)),
		pr(701, 700, "sleep 100000", cgroup("/rcx1"), freezer("/rcx1"), nspid(6)),
		pr(800, 1, "systemd-nspawn -q -D /tmp/nsroot -M nsp-test1 --register=no --keep-unit /bin/sh -c sleep", cgroup("/rt/supervisor")),
		pr(801, 800, "sleep 100001", cgroup("/rt/payload"), nspid(1)),
	)
	v := Build(s, Presets(), nil)
	pod := one(t, v, id)
	wantPIDs(t, pod, 600, 601, 602)
	wantStrings(t, "aliases", pod.Aliases, "pod-test-1")
	wantStrings(t, "reconcile", pod.Reconcile, "podman", "--root", "/r", "--runroot", "/rr", "--tmpdir", "/t", "rm", "--force", id)
	wantStrings(t, "inspect", pod.Inspect, "podman", "--root", "/r", "--runroot", "/rr", "--tmpdir", "/t", "container", "inspect", id)
	if pod.Runtime != "podman" || pod.Cgroup != lib || pod.Freezer != lib || pod.CgroupOnly || pod.Orphan {
		t.Errorf("podman: runtime %q cgroup %q freezer %q cgroup-only %v orphan %v", pod.Runtime, pod.Cgroup, pod.Freezer, pod.CgroupOnly, pod.Orphan)
	}
	if got, err := v.Resolve("pod-test-1"); err != nil || got != pod {
		t.Errorf("the container name resolves to %v, %v", got, err)
	}
	rc := one(t, v, "rcx1")
	wantPIDs(t, rc, 700, 701)
	wantStrings(t, "reconcile", rc.Reconcile, "runc", "delete", "--force", "rcx1")
	wantStrings(t, "inspect", rc.Inspect, "runc", "state", "rcx1")
	if rc.Runtime != "runc" || rc.Cgroup != "/rcx1" || rc.Orphan {
		t.Errorf("runc: runtime %q cgroup %q orphan %v", rc.Runtime, rc.Cgroup, rc.Orphan)
	}
	ns := one(t, v, "nsp-test1")
	wantPIDs(t, ns, 800, 801)
	if ns.Runtime != "nspawn" {
		t.Errorf("nspawn: runtime %q", ns.Runtime)
	}

	// The only container under libpod_parent, with conmon beside it in
	// both hierarchies (cgroupfs manager on a v2 host): libpod_parent holds
	// nothing else now, but it is podman's parent for every container to
	// come, and it does not name this one. The container's own cgroup is
	// the sandbox's, never the parent.
	s = snap(
		pr(600, 1, conmon, cgroup("/libpod_parent/conmon"), freezer("/libpod_parent/conmon")),
		pr(601, 600, "sleep 100001", cgroup(lib), freezer(lib), nspid(1)),
		pr(602, 601, "sleep 100000", cgroup(lib), freezer(lib), nspid(6)),
	)
	pod = one(t, Build(s, Presets(), nil), id)
	wantPIDs(t, pod, 600, 601, 602)
	if pod.Cgroup != lib || pod.Freezer != lib {
		t.Errorf("lone podman container: cgroup %q freezer %q, want %s in both", pod.Cgroup, pod.Freezer, lib)
	}

	// conmon gone: the container is still podman's, an orphan, and the
	// reconcile command falls back to podman's defaults.
	s = snap(
		pr(601, 1, "sleep 100001", cgroup(lib), freezer(lib), nspid(1)),
		pr(602, 601, "sleep 100000", cgroup(lib), freezer(lib), nspid(6)),
	)
	pod = one(t, Build(s, Presets(), nil), id)
	wantBadges(t, pod, BadgeOrphan)
	wantStrings(t, "reconcile", pod.Reconcile, "podman", "rm", "--force", id)
	wantStrings(t, "inspect", pod.Inspect, "podman", "container", "inspect", id)
	if !pod.CgroupOnly || pod.Cgroup != lib {
		t.Errorf("conmon-less podman: cgroup-only %v cgroup %q", pod.CgroupOnly, pod.Cgroup)
	}
}

// TestDedicatedCgroupNamesTheSandbox: a dedicated cgroup is provably the
// sandbox's (its path names it, or a preset's layout recognises it), never a
// parent or slice that merely holds nothing else at this moment. Podman
// rootful from a login shell (systemd manager, as the Debian 12 test host
// showed): conmon in machine.slice/libpod-conmon-<id>.scope, the container in
// machine.slice/libpod-<id>.scope (crun: …/libpod-<id>.scope/container, and
// the scope is still the container's). Both scopes carry the ID; the only
// cgroup holding both is machine.slice, which holds every machine of the
// host.
func TestDedicatedCgroupNamesTheSandbox(t *testing.T) {
	id := "5be1c0a06b5d4aa32b98a3b64ac54b87f4c2f4e3d8e35e7a1c77a58a39a8e2d1"
	other := "77aa0a06b5d4aa32b98a3b64ac54b87f4c2f4e3d8e35e7a1c77a58a39a8e2d1"
	conmon := func(pid int, id string) *proc.Process {
		return pr(pid, 1, "/usr/bin/conmon --api-version 1 -c "+id+" -u "+id+" -r /usr/bin/runc -n web", cgroup("/machine.slice/libpod-conmon-"+id+".scope"))
	}
	scope := "/machine.slice/libpod-" + id + ".scope"
	for _, tc := range []struct {
		name  string
		procs []*proc.Process
		want  string
		pids  []int
	}{
		{"runc, the only machine", []*proc.Process{
			conmon(600, id),
			pr(601, 600, "httpd", cgroup(scope), nspid(1)),
		}, scope, []int{600, 601}},
		{"crun's container sub-cgroup", []*proc.Process{
			conmon(600, id),
			pr(601, 600, "httpd", cgroup(scope+"/container"), nspid(1)),
			pr(602, 601, "httpd", cgroup(scope+"/container"), nspid(2)),
		}, scope, []int{600, 601, 602}},
		{"beside another machine", []*proc.Process{
			conmon(600, id),
			pr(601, 600, "httpd", cgroup(scope), nspid(1)),
			conmon(700, other),
			pr(701, 700, "httpd", cgroup("/machine.slice/libpod-"+other+".scope"), nspid(1)),
		}, scope, []int{600, 601}},
		{"conmon in the caller's service (podman run from a unit)", []*proc.Process{
			pr(600, 1, "/usr/bin/conmon --api-version 1 -c "+id+" -u "+id+" -r /usr/bin/runc -n web", cgroup("/system.slice/run-u7.service")),
			pr(601, 600, "httpd", cgroup(scope), nspid(1)),
		}, scope, []int{600, 601}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := one(t, Build(snap(tc.procs...), Presets(), nil), id)
			if sb.Runtime != "podman" || sb.Cgroup != tc.want {
				t.Errorf("runtime %q cgroup %q, want podman in %s", sb.Runtime, sb.Cgroup, tc.want)
			}
			wantPIDs(t, sb, tc.pids...)
		})
	}

	// A sandbox alone in cgroups that do not name it has none of its own:
	// the caller's service, a slice, a pool directory hold it only now.
	for _, dir := range []string{"/system.slice/vmrunner.service", "/machine.slice", "/pool/3"} {
		t.Run("alone in "+dir, func(t *testing.T) {
			s := snap(
				pr(800, 1, "systemd-nspawn -q -D /srv/m -M box1 --register=no --keep-unit /bin/sh", cgroup(dir)),
				pr(801, 800, "sh", cgroup(dir+"/payload"), nspid(1)),
			)
			sb := one(t, Build(s, Presets(), nil), "box1")
			if sb.Cgroup != "" {
				t.Errorf("dedicated cgroup %q, want none: %s does not name box1", sb.Cgroup, dir)
			}
		})
	}
}

// TestStandaloneRuncOnSystemd: runc run -d on a systemd host puts the
// container beside its caller, in the caller's slice (/system.slice/<id>
// from a service, /user.slice/user-<uid>.slice/<id> from a login shell), or
// with --systemd-cgroup in system.slice/runc-<id>.scope. Each is runc's,
// with runc's reconcile, and no orphan: runc has no supervisor. Never
// containerd's /<ns>/<id>, which /system.slice/<id> resembles, and never a
// unit's cgroup.
func TestStandaloneRuncOnSystemd(t *testing.T) {
	for _, cg := range []string{"/system.slice/r1", "/user.slice/user-0.slice/r1", "/system.slice/runc-r1.scope"} {
		t.Run(cg, func(t *testing.T) {
			v := Build(snap(
				pr(700, 1, "sleep 100001", cgroup(cg), nspid(1)),
				pr(701, 700, "sleep 100002", cgroup(cg), nspid(6)),
			), Presets(), nil)
			rc := one(t, v, "r1")
			wantPIDs(t, rc, 700, 701)
			wantStrings(t, "reconcile", rc.Reconcile, "runc", "delete", "--force", "r1")
			if rc.Runtime != "runc" || rc.Cgroup != cg || rc.Orphan || len(rc.Badges) != 0 {
				t.Errorf("runtime %q cgroup %q orphan %v badges %v", rc.Runtime, rc.Cgroup, rc.Orphan, rc.Badges)
			}
		})
	}
	// A unit's cgroup under a slice is no runc container, whatever runs
	// in a pid namespace there.
	v := Build(snap(pr(800, 1, "sleep 1", cgroup("/system.slice/foo.service"), nspid(1))), Presets(), nil)
	if len(v.Sandboxes) != 0 {
		t.Errorf("a service's cgroup made sandboxes %v", v.Sandboxes[0].Key())
	}
}

// TestNspawnMachineIsOneSandbox: systemd-nspawn -M <name> registered with
// machined forks the payload into machine.slice/machine-<name>.scope/payload
// while nspawn itself stays in its caller's cgroup (a service, a login
// session with other processes); with --keep-unit in a machine-<name>.scope
// nspawn is in that scope too. Either way one machine is one sandbox,
// nspawn's, whose dedicated cgroup is the machine's scope, whatever the
// name's length.
func TestNspawnMachineIsOneSandbox(t *testing.T) {
	for _, tc := range []struct {
		name, machine, nspawnCg string
		scope                   string
	}{
		{"registered, from a service", "m1", "/system.slice/vmrun.service", `/machine.slice/machine-m1.scope`},
		{"registered, from a login session", "m1", "/user.slice/user-0.slice/session-3.scope", `/machine.slice/machine-m1.scope`},
		{"registered, escaped name", "web-1", "/system.slice/vmrun.service", `/machine.slice/machine-web\x2d1.scope`},
		{"--keep-unit in the machine's scope", "m1", `/machine.slice/machine-m1.scope`, `/machine.slice/machine-m1.scope`},
		{"--keep-unit, supervisor sub-cgroup", "m1", `/machine.slice/machine-m1.scope/supervisor`, `/machine.slice/machine-m1.scope`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snap(
				// The caller, no member: in nspawn's cgroup, unless nspawn
				// was started in a scope of its own (systemd-run --scope).
				pr(900, 1, "/bin/bash -l", cgroup(callerCgroup(tc.nspawnCg))),
				pr(901, 900, "systemd-nspawn -q -D /var/lib/machines/"+tc.machine+" -M "+tc.machine+" /bin/sh", cgroup(tc.nspawnCg)),
				pr(902, 901, "/bin/sh", cgroup(tc.scope+"/payload"), nspid(1)),
				pr(903, 902, "sleep 100", cgroup(tc.scope+"/payload"), nspid(7)),
			)
			v := Build(s, Presets(), nil)
			if len(v.Sandboxes) != 1 {
				var keys []string
				for _, sb := range v.Sandboxes {
					keys = append(keys, sb.Key())
				}
				t.Fatalf("sandboxes %q, want one", keys)
			}
			sb := one(t, v, tc.machine)
			wantPIDs(t, sb, 901, 902, 903)
			if sb.Runtime != "nspawn" || sb.Cgroup != tc.scope {
				t.Errorf("runtime %q cgroup %q, want nspawn in %s", sb.Runtime, sb.Cgroup, tc.scope)
			}
			if got, err := v.Resolve(tc.machine); err != nil || got != sb {
				t.Errorf("Resolve(%s) = %v, %v", tc.machine, got, err)
			}
		})
		// Until the payload execs, it is a fork of nspawn with nspawn's
		// argv; machined has made the scope already, and nspawn moves it
		// into the payload sub-cgroup (systemd 252 seen in both places).
		for _, at := range []string{tc.scope, tc.scope + "/payload"} {
			t.Run(tc.name+", before the payload execs, in "+at, func(t *testing.T) {
				argv := "systemd-nspawn -q -D /var/lib/machines/" + tc.machine + " -M " + tc.machine + " /bin/sh"
				s := snap(
					pr(900, 1, "/bin/bash -l", cgroup(callerCgroup(tc.nspawnCg))),
					pr(901, 900, argv, cgroup(tc.nspawnCg)),
					pr(902, 901, argv, cgroup(at), nspid(1)),
				)
				v := Build(s, Presets(), nil)
				sb := one(t, v, tc.machine)
				wantPIDs(t, sb, 901, 902)
				if sb.Cgroup != tc.scope {
					t.Errorf("cgroup %q, want %s", sb.Cgroup, tc.scope)
				}
			})
		}
	}
}

func callerCgroup(nspawnCg string) string {
	if strings.HasPrefix(nspawnCg, "/machine.slice/") {
		return "/user.slice/user-0.slice/session-3.scope"
	}
	return nspawnCg
}

// A runtime's command is filled in from a process's command line: a
// capture that would start an argument with "-" makes the runtime read
// an option (podman rm --force --all), and a process in a pid namespace
// below sandtop's (a container's own, whatever it calls itself) never
// names the command, nor the storage it works on.
func TestReconcileFromHostileArgv(t *testing.T) {
	id := "016f5d29bd3ad4d98a6a148692c7fd2020463ec4301b5a0fc43ac7eb8f9d0965"
	lib := "/libpod_parent/libpod-" + id
	exit := func(root string) string {
		return " --exit-command /usr/bin/podman --exit-command-arg --root --exit-command-arg " + root +
			" --exit-command-arg --runroot --exit-command-arg /rr --exit-command-arg --tmpdir --exit-command-arg /t"
	}
	for _, c := range []struct {
		name  string
		procs []*proc.Process
		id    string
		want  []string
	}{
		{"option-as-id", []*proc.Process{pr(600, 1, "/usr/bin/conmon --api-version 1 -c --all"+exit("/r"), cgroup("/libpod_parent/conmon"))}, "--all", nil},
		{"nested-conmon", []*proc.Process{
			pr(600, 1, "/usr/bin/conmon --api-version 1 -c "+id+exit("/proc/601/root/evil"), cgroup(lib), nspid(7)),
			pr(601, 600, "sleep 100001", cgroup(lib), nspid(8)),
		}, id, []string{"podman", "rm", "--force", id}},
		{"host-conmon", []*proc.Process{
			pr(600, 1, "/usr/bin/conmon --api-version 1 -c "+id+exit("/r"), cgroup("/libpod_parent/conmon")),
			pr(601, 600, "sleep 100001", cgroup(lib), nspid(1)),
		}, id, []string{"podman", "--root", "/r", "--runroot", "/rr", "--tmpdir", "/t", "rm", "--force", id}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sb := one(t, Build(snap(c.procs...), Presets(), nil), c.id)
			if !slices.Equal(sb.Reconcile, c.want) {
				t.Errorf("reconcile %q, want %q", sb.Reconcile, c.want)
			}
			for _, a := range sb.Inspect {
				if strings.HasPrefix(a, "/proc") || strings.HasPrefix(a, "--all") {
					t.Errorf("inspect %q", sb.Inspect)
				}
			}
		})
	}
}
