package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandtop/sandtop/proc/proctest"
)

// TestDemoShapes checks the process shapes each runtime and behaviour must
// show, on one demo fleet.
func TestDemoShapes(t *testing.T) {
	t.Parallel()
	_, m := startFleet(t, Demo())
	owner := m.Owner.PID
	cgroupOf := func(t *testing.T, p Process) string { return procCgroup(t, p.PID).Unified }
	needRoot := func(t *testing.T) {
		if !m.Rootful || m.Cgroup == "" {
			proctest.SkipMissing(t, "needs root and a writable cgroup v2 hierarchy")
		}
	}
	checks := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"vm0 chain is its own process group under the runner", func(t *testing.T) {
			s := sandbox(t, &m, "vm0-healthy")
			sudo, fc := role(t, s, "sudo"), role(t, s, "firecracker")
			if st := mustStat(t, sudo.PID); st.PGRP != sudo.PID || st.PPID != s.Supervisor.PID {
				t.Errorf("sudo: pgid %d ppid %d, want pgid %d ppid %d (runner)", st.PGRP, st.PPID, sudo.PID, s.Supervisor.PID)
			}
			for _, p := range s.Processes {
				if pg := mustStat(t, p.PID).PGRP; pg != sudo.PID {
					t.Errorf("%s %d in group %d, want %d", p.Role, p.PID, pg, sudo.PID)
				}
			}
			want := filepath.Join(m.Base, "vm0", "workspaces", s.ID)
			if got := cwd(t, fc.PID); got != want {
				t.Errorf("firecracker cwd %s, want %s", got, want)
			}
			runner := cmdline(t, s.Supervisor.PID)
			if !slices.Contains(runner, "start") || !slices.Contains(runner, "--config") {
				t.Errorf("runner argv %q lacks start --config", runner)
			}
		}},
		{"orphaned vm0 chain is re-parented to the owner", func(t *testing.T) {
			s := sandbox(t, &m, "vm0-orphan")
			if !s.Orphan {
				t.Error("manifest does not mark it orphan")
			}
			if _, ok, _ := lookup(s.Supervisor.Identity); ok {
				t.Errorf("runner %s still alive", s.Supervisor.Identity)
			}
			sudo := role(t, s, "sudo")
			if st := mustStat(t, sudo.PID); st.PPID != owner || st.PGRP != sudo.PID {
				t.Errorf("sudo: ppid %d pgid %d, want ppid %d (owner) pgid %d", st.PPID, st.PGRP, owner, sudo.PID)
			}
		}},
		{"jailer exec'd firecracker in place in firecracker/<id>", func(t *testing.T) {
			needRoot(t)
			s := sandbox(t, &m, "fc-jailer")
			fc := s.Root()
			if fc.Role != "firecracker" || fc.Argv[0] != "/firecracker" || fc.Argv[2] != s.ID {
				t.Errorf("root %s %q, want /firecracker --id %s", fc.Role, fc.Argv, s.ID)
			}
			if got := cgroupOf(t, fc); got != s.Cgroup || !strings.HasSuffix(got, "/firecracker/"+s.ID) {
				t.Errorf("cgroup %s, want %s ending in firecracker/%s", got, s.Cgroup, s.ID)
			}
			if st := mustStat(t, fc.PID); st.PPID != owner || st.Session != fc.PID {
				t.Errorf("ppid %d sid %d, want daemonized under the owner", st.PPID, st.Session)
			}
		}},
		{"boxlite: inner bwrap inits a pid namespace, all in boxlite/<id>", func(t *testing.T) {
			s := sandbox(t, &m, "boxlite-detached")
			inner, shim := role(t, s, "bwrap-init"), role(t, s, "boxlite-shim")
			if !m.Rootful {
				if s.PidNS || len(strings.Fields(statusField(t, shim.PID, "NSpid"))) != 1 {
					t.Errorf("pidns %v without root", s.PidNS)
				}
				return
			}
			needRoot(t)
			if got := statusField(t, inner.PID, "NSpid"); got != fmt.Sprintf("%d\t1", inner.PID) {
				t.Errorf("inner bwrap NSpid %q, want its pid and 1", got)
			}
			if got := strings.Fields(statusField(t, shim.PID, "NSpid")); len(got) != 2 {
				t.Errorf("shim NSpid %q, want two entries", got)
			}
			if !strings.HasSuffix(s.Cgroup, "/boxlite/"+s.ID) {
				t.Errorf("cgroup %s does not end in boxlite/%s", s.Cgroup, s.ID)
			}
			for _, p := range s.Processes {
				if got := cgroupOf(t, p); got != s.Cgroup {
					t.Errorf("%s in %s, want %s", p.Role, got, s.Cgroup)
				}
			}
			if ppid := mustStat(t, s.Root().PID).PPID; ppid != owner {
				t.Errorf("detached box's outer bwrap has ppid %d, want the owner %d", ppid, owner)
			}
			if want := filepath.Join(m.Base, "home/.boxlite/boxes", s.ID, "bin/boxlite-shim"); shim.Argv[0] != want {
				t.Errorf("shim argv[0] %s, want %s", shim.Argv[0], want)
			}
		}},
		{"attached boxlite hangs below its CLI with --die-with-parent", func(t *testing.T) {
			s := sandbox(t, &m, "boxlite-attached")
			if ppid := mustStat(t, s.Root().PID).PPID; ppid != s.Supervisor.PID {
				t.Errorf("outer bwrap ppid %d, want boxlite %d", ppid, s.Supervisor.PID)
			}
			if !slices.Contains(s.Root().Argv, "--die-with-parent") {
				t.Error("argv lacks --die-with-parent")
			}
			if got := statusField(t, role(t, s, "bwrap-init").PID, "PPid"); got != fmt.Sprint(s.Root().PID) {
				t.Errorf("inner bwrap PPid %s, want %d", got, s.Root().PID)
			}
		}},
		{"paused cube: cgroup v2 frozen", func(t *testing.T) {
			s := sandbox(t, &m, "cube-paused")
			if s.CgroupDir == "" {
				// Without a cgroup of its own the sandbox is stopped instead.
				if s.Paused != PauseStop || !slices.ContainsFunc(s.Notes, func(n string) bool {
					return strings.Contains(n, "paused via SIGSTOP instead of cgroup freeze")
				}) {
					t.Errorf("paused %q, notes %q; want the SIGSTOP fallback, noted", s.Paused, s.Notes)
				}
				if st := mustStat(t, s.Root().PID); st.State != "T" {
					t.Errorf("shim in state %s, want T", st.State)
				}
				return
			}
			if s.Paused != PauseFreeze {
				t.Fatalf("paused %q, want freeze; notes %q", s.Paused, s.Notes)
			}
			if !hasLine([]byte(readFile(t, filepath.Join(s.CgroupDir, "cgroup.events"))), "frozen 1") {
				t.Error("cgroup.events does not say frozen 1")
			}
			if !strings.Contains(s.Cgroup, "/cube_sandbox/sandbox/") {
				t.Errorf("cgroup %s is not in the cube_sandbox pool", s.Cgroup)
			}
			shim := s.Root()
			if got := cgroupOf(t, shim); got != s.Cgroup {
				t.Errorf("shim in %s, want %s", got, s.Cgroup)
			}
			if !listening(t, shim.Argv[len(shim.Argv)-1]) {
				t.Error("cubelet is not listening on -address")
			}
		}},
		{"paused cube: v1 freezer FROZEN", func(t *testing.T) {
			needRoot(t)
			s := sandbox(t, &m, "cube-paused-v1")
			if s.FreezerDir == "" {
				t.Skip("no v1 freezer on this host: " + strings.Join(s.Notes, "; "))
			}
			if got := strings.TrimSpace(readFile(t, filepath.Join(s.FreezerDir, "freezer.state"))); got != "FROZEN" {
				t.Errorf("freezer.state %s", got)
			}
			if got := procCgroup(t, s.Root().PID).V1["freezer"]; got != s.Freezer {
				t.Errorf("shim in freezer %s, want %s", got, s.Freezer)
			}
		}},
		{"orphaned cube: socket left behind, nobody listening", func(t *testing.T) {
			s := sandbox(t, &m, "cube-orphan")
			sock := s.Root().Argv[len(s.Root().Argv)-1]
			if _, err := os.Stat(sock); err != nil {
				t.Errorf("socket file: %v", err)
			}
			if listening(t, sock) {
				t.Errorf("%s still has a listener", sock)
			}
		}},
		{"containerd shims share containerd.service with containerd", func(t *testing.T) {
			needRoot(t)
			s := sandbox(t, &m, "containerd-web")
			shim := s.Root()
			if got, want := cgroupOf(t, shim), cgroupOf(t, *s.Supervisor); got != want || !strings.HasSuffix(got, "containerd.service") {
				t.Errorf("shim in %s, containerd in %s", got, want)
			}
			if st := mustStat(t, shim.PID); st.PGRP != shim.PID || st.PPID != owner {
				t.Errorf("shim pgid %d ppid %d, want own group under the owner", st.PGRP, st.PPID)
			}
			for _, r := range []string{"pause", "app"} {
				p := role(t, s, r)
				if got := cgroupOf(t, p); got != s.Cgroup || !strings.HasSuffix(got, "/k8s.io/"+s.ID) {
					t.Errorf("%s in %s, want %s", r, got, s.Cgroup)
				}
			}
			if got := comm(t, shim.PID); got != "containerd-shim" {
				t.Errorf("shim comm %q, want the kernel's 15-byte cut", got)
			}
			if got := cwd(t, shim.PID); !strings.HasSuffix(got, "/k8s.io/"+s.ID) {
				t.Errorf("shim cwd %s is not its bundle", got)
			}
		}},
		{"zombies are never reaped", func(t *testing.T) {
			s := sandbox(t, &m, "containerd-zombies")
			zs := s.Role(RoleZombie)
			if len(zs) != 3 {
				t.Fatalf("%d zombies, want 3", len(zs))
			}
			app := role(t, s, "app")
			for _, z := range zs {
				if st := mustStat(t, z.PID); st.State != "Z" || st.PPID != app.PID {
					t.Errorf("zombie %d: state %s ppid %d, want Z under app %d", z.PID, st.State, st.PPID, app.PID)
				}
			}
		}},
		{"stubborn app ignores SIGTERM", func(t *testing.T) {
			s := sandbox(t, &m, "containerd-stubborn")
			if !ignores(t, role(t, s, "app").PID, int(syscall.SIGTERM)) {
				t.Error("SigIgn lacks SIGTERM")
			}
			if ignores(t, role(t, s, "pause").PID, int(syscall.SIGTERM)) {
				t.Error("pause ignores SIGTERM too")
			}
		}},
		{"forker keeps starting new children", func(t *testing.T) {
			s := sandbox(t, &m, "docker-forker")
			app := role(t, s, "app")
			seen := map[int]bool{}
			proctest.Eventually(2*time.Second, func() bool {
				kids, _ := children(app.PID)
				for _, k := range kids {
					seen[k] = true
				}
				return len(seen) >= 5
			})
			if len(seen) < 5 {
				t.Errorf("saw %d distinct children in 2s, want >= 5", len(seen))
			}
			kids, _ := children(app.PID)
			if len(kids) > 4 {
				t.Errorf("%d children alive at once, want at most 4", len(kids))
			}
		}},
		{"escaped child is re-parented to the owner and stays in the cgroup", func(t *testing.T) {
			s := sandbox(t, &m, "docker-escape")
			e := role(t, s, RoleEscaped)
			st := mustStat(t, e.PID)
			if st.PPID != owner || st.Session != e.PID {
				t.Errorf("escaped: ppid %d sid %d, want ppid %d (owner) and its own session", st.PPID, st.Session, owner)
			}
			if m.Cgroup != "" {
				if got := cgroupOf(t, e); got != s.Cgroup || !strings.HasSuffix(got, "docker-"+s.ID+".scope") {
					t.Errorf("escaped in %s, want %s", got, s.Cgroup)
				}
			}
		}},
		{"stopped docker: every member in state T", func(t *testing.T) {
			s := sandbox(t, &m, "docker-stopped")
			for _, p := range s.Processes {
				if st := mustStat(t, p.PID); st.State != "T" {
					t.Errorf("%s %d in state %s, want T", p.Role, p.PID, st.State)
				}
			}
		}},
		{"k8s pod: one scope per container below the pod slice", func(t *testing.T) {
			needRoot(t)
			s := sandbox(t, &m, "k8s-pod")
			uid := strings.ReplaceAll(s.ID, "-", "_")
			if !strings.HasSuffix(s.Cgroup, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"+uid+".slice") {
				t.Errorf("pod cgroup %s", s.Cgroup)
			}
			if len(s.AltIDs) != 3 || cmdline(t, s.Root().PID)[4] != s.AltIDs[0] {
				t.Fatalf("alt ids %q, shim argv %q", s.AltIDs, s.Root().Argv)
			}
			for i, r := range []string{"pause", "app", "sidecar"} {
				want := s.Cgroup + "/cri-containerd-" + s.AltIDs[i] + ".scope"
				if got := cgroupOf(t, role(t, s, r)); got != want {
					t.Errorf("%s in %s, want %s", r, got, want)
				}
			}
		}},
		{"kata: qemu named sandbox-<id> below the shim", func(t *testing.T) {
			s := sandbox(t, &m, "kata")
			q := role(t, s, "qemu")
			if i := slices.Index(q.Argv, "-name"); i < 0 || q.Argv[i+1] != "sandbox-"+s.ID {
				t.Errorf("qemu argv %q", q.Argv)
			}
			if ppid := mustStat(t, q.PID).PPID; ppid != s.Root().PID {
				t.Errorf("qemu ppid %d, want shim %d", ppid, s.Root().PID)
			}
			if got := comm(t, q.PID); got != "qemu-system-x86" {
				t.Errorf("comm %q", got)
			}
		}},
		{"gvisor: sentry and gofer named exe by the kernel", func(t *testing.T) {
			s := sandbox(t, &m, "gvisor")
			sentry := role(t, s, "runsc-sandbox")
			if sentry.Argv[len(sentry.Argv)-1] != s.ID || !slices.Contains(sentry.Argv, "boot") {
				t.Errorf("sentry argv %q", sentry.Argv)
			}
			for _, p := range []Process{sentry, role(t, s, "runsc-gofer")} {
				if got := comm(t, p.PID); got != "exe" {
					t.Errorf("%s comm %q, want exe", p.Role, got)
				}
			}
		}},
		{"libvirt guest in an escaped machine scope", func(t *testing.T) {
			needRoot(t)
			s := sandbox(t, &m, "libvirt-guest")
			want := "/machine.slice/machine-" + strings.ReplaceAll(s.ID, "-", `\x2d`) + ".scope"
			if got := cgroupOf(t, s.Root()); got != s.Cgroup || !strings.HasSuffix(got, want) {
				t.Errorf("qemu in %s, want ...%s", got, want)
			}
		}},
		{"cloudflare session is a 3-level tree in the container", func(t *testing.T) {
			s := sandbox(t, &m, "cloudflare-session")
			session := role(t, s, "session")
			kids, err := children(session.PID)
			if err != nil || len(kids) != 2 {
				t.Fatalf("session children %v, %v; want 2", kids, err)
			}
			for _, k := range kids {
				if gk, _ := children(k); len(gk) != 1 {
					t.Errorf("command %d has %d children, want 1", k, len(gk))
				}
			}
			if m.Cgroup != "" {
				for _, p := range s.Processes[1:] {
					if got := cgroupOf(t, p); got != s.Cgroup {
						t.Errorf("%s in %s, want %s", p.Role, got, s.Cgroup)
					}
				}
			}
		}},
		{"containerd container in /<ns>/<id>, ns the shim's -namespace", func(t *testing.T) {
			needRoot(t)
			s := sandbox(t, &m, "containerd-web")
			shim := s.Root()
			i := slices.Index(shim.Argv, "-namespace")
			if i < 0 {
				t.Fatalf("shim argv %q has no -namespace", shim.Argv)
			}
			want := "/" + shim.Argv[i+1] + "/" + s.ID
			if !strings.HasSuffix(s.Cgroup, want) {
				t.Errorf("container cgroup %s, want ...%s", s.Cgroup, want)
			}
			if got := cgroupOf(t, role(t, s, "app")); got != s.Cgroup {
				t.Errorf("app in %s, want %s", got, s.Cgroup)
			}
		}},
		{"podman: conmon with no daemon, the container in libpod-<id>", func(t *testing.T) {
			s := sandbox(t, &m, "podman-web")
			conmon := s.Root()
			argv := strings.Join(conmon.Argv, " ")
			for _, want := range []string{"--api-version 1 -c " + s.ID + " -u " + s.ID + " -r /usr/bin/runc -b ",
				" -n podman-web ", " --exit-command /usr/bin/podman ", "--exit-command-arg cleanup --exit-command-arg " + s.ID} {
				if !strings.Contains(argv, want) {
					t.Errorf("conmon argv lacks %q: %s", want, argv)
				}
			}
			if conmon.Argv[0] != "/usr/bin/conmon" || s.Supervisor != nil {
				t.Errorf("conmon argv[0] %q, supervisor %+v (want none)", conmon.Argv[0], s.Supervisor)
			}
			if st := mustStat(t, conmon.PID); st.Session != conmon.PID {
				t.Errorf("conmon session %d, want its own", st.Session)
			}
			if m.Cgroup == "" {
				return
			}
			if !strings.HasSuffix(s.Cgroup, "/libpod_parent/libpod-"+s.ID) {
				t.Errorf("container cgroup %s, want .../libpod_parent/libpod-%s", s.Cgroup, s.ID)
			}
			if got := cgroupOf(t, conmon); !strings.HasSuffix(got, "/libpod_parent/conmon") {
				t.Errorf("conmon in %s, want .../libpod_parent/conmon", got)
			}
			if got := cgroupOf(t, role(t, s, "app")); got != s.Cgroup {
				t.Errorf("app in %s, want %s", got, s.Cgroup)
			}
		}},
		{"bystanders stand next to sandboxes", func(t *testing.T) {
			var cg, sib Process
			for _, b := range m.Bystanders {
				switch b.Role {
				case "bystander-cgroup":
					cg = b
				case "bystander-sibling":
					sib = b
				}
			}
			web := sandbox(t, &m, "containerd-web")
			if got, want := cgroupOf(t, cg), cgroupOf(t, web.Root()); got != want {
				t.Errorf("cgroup bystander in %s, want %s", got, want)
			}
			vm := sandbox(t, &m, "vm0-healthy")
			if ppid := mustStat(t, sib.PID).PPID; ppid != mustStat(t, vm.Root().PID).PPID {
				t.Errorf("sibling bystander ppid %d, want the runner %d", ppid, vm.Supervisor.PID)
			}
		}},
	}
	for _, c := range checks {
		t.Run(c.name, c.check)
	}
}
