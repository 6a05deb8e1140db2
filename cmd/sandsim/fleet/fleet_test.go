package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc/proctest"
)

// TestManifestMatchesProc starts each scenario and checks, through /proc,
// that every process of the manifest exists with the manifest's argv,
// comm and start time; the cleanup then proves nothing survives Close.
func TestManifestMatchesProc(t *testing.T) {
	for _, name := range []string{"demo", "seeds"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spec, err := Scenario(name)
			if err != nil {
				t.Fatal(err)
			}
			_, m := startFleet(t, spec)
			if len(m.Sandboxes) != len(spec.Sandboxes) {
				t.Fatalf("%d sandboxes, want %d", len(m.Sandboxes), len(spec.Sandboxes))
			}
			killed := map[int]bool{}
			for _, s := range m.Sandboxes {
				if s.Orphan {
					killed[s.Supervisor.PID] = true
				}
			}
			for _, p := range append(m.Processes(), m.Owner) {
				if killed[p.PID] {
					if _, ok, _ := lookup(p.Identity); ok {
						t.Errorf("killed supervisor %s %s is alive", p.Role, p.Identity)
					}
					continue
				}
				st := mustStat(t, p.PID)
				if st.Starttime != p.Start {
					t.Errorf("%s %d: start %d, manifest says %d", p.Role, p.PID, st.Starttime, p.Start)
				}
				if p.Role == RoleZombie {
					if st.State != "Z" {
						t.Errorf("zombie %d is in state %s", p.PID, st.State)
					}
					continue
				}
				if got := cmdline(t, p.PID); !slices.Equal(got, p.Argv) {
					t.Errorf("%s %d: argv %q, manifest says %q", p.Role, p.PID, got, p.Argv)
				}
				if got := comm(t, p.PID); got != p.Comm {
					t.Errorf("%s %d: comm %q, manifest says %q", p.Role, p.PID, got, p.Comm)
				}
			}
		})
	}
}

// TestOwnerKilledAbruptly kills the owner with SIGKILL, which leaves the
// fleet to itself: nodes exit as their lifeline closes, but paused members
// cannot, and everything is re-parented to this process. Close must finish
// the job, and nothing may be left: no process, no zombie, no cgroup.
func TestOwnerKilledAbruptly(t *testing.T) {
	t.Parallel()
	spec := Spec{Scenario: "abrupt", Sandboxes: []SandboxSpec{
		{Name: "v1", Runtime: Cube, Pause: PauseFreezerV1},
		{Name: "v2", Runtime: Boxlite, Detached: true, Pause: PauseFreeze},
		{Name: "stopped", Runtime: Docker, Pause: PauseStop, Zombies: 2},
		{Name: "orphan", Runtime: VM0, Orphan: true},
		{Name: "escape", Runtime: Cloudflare, Escape: true, Forker: true, Leaves: 3},
	}}
	f, m := startFleet(t, spec)
	if err := unix.Kill(m.Owner.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Let the lifeline do its part before Close, so that the test covers
	// zombies re-parented to this process, not just live nodes: wait until
	// the orphan sandbox's nodes, which watch the lifeline, have exited.
	lifelineDone := func() bool {
		for _, p := range sandbox(t, &m, "orphan").Processes {
			if st, ok, _ := lookup(p.Identity); ok && st.State != "Z" {
				return false
			}
		}
		return true
	}
	if !proctest.Eventually(10*time.Second, lifelineDone) {
		t.Errorf("the orphan sandbox's nodes outlived their lifeline by 10s")
	}
	// A frozen (or, without cgroups, stopped) member cannot read its
	// lifeline: only Close can end it.
	paused := sandbox(t, &m, "v2").Root()
	if _, ok, _ := lookup(paused.Identity); !ok {
		t.Errorf("paused %s died before Close", paused.Role)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close after the owner was killed: %v", err)
	}
	assertGone(t, &m)
	// Every session of the fleet is led by the owner or a manifest process.
	sessions := map[int]bool{m.Owner.PID: true}
	for _, p := range m.Processes() {
		sessions[p.PID] = true
	}
	kids, err := children(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if st, err := readStat(k); err == nil && sessions[st.Session] {
			t.Errorf("child %d (%s, state %s) of the fleet is still ours", k, st.Comm, st.State)
		}
	}
}

// TestCommands drives the owner's command protocol.
func TestCommands(t *testing.T) {
	t.Parallel()
	spec := Spec{Scenario: "commands", Sandboxes: []SandboxSpec{
		{Name: "vm", Runtime: VM0},
		{Name: "web", Runtime: Docker},
		{Name: "stopped", Runtime: Containerd, Pause: PauseStop},
	}}
	f, m := startFleet(t, spec)

	t.Run("kill supervisor orphans the vm0 run", func(t *testing.T) {
		s := sandbox(t, &m, "vm")
		if err := f.KillSupervisor(s.ID); err != nil {
			t.Fatal(err)
		}
		if got := f.Manifest(); !got.Sandbox("vm").Orphan {
			t.Error("manifest not updated")
		}
		if ppid := mustStat(t, s.Root().PID).PPID; ppid != m.Owner.PID {
			t.Errorf("sudo ppid %d, want owner %d", ppid, m.Owner.PID)
		}
		// A supervisor that is already dead counts as killed.
		if err := f.KillSupervisor(s.ID); err != nil {
			t.Errorf("second KillSupervisor: %v", err)
		}
	})
	t.Run("freeze and thaw", func(t *testing.T) {
		s := sandbox(t, &m, "web")
		if s.CgroupDir == "" {
			proctest.SkipMissing(t, "no cgroup: %s", strings.Join(s.Notes, "; "))
		}
		if err := f.Freeze("web"); err != nil {
			t.Fatal(err)
		}
		if frozen, err := isFrozen(s.CgroupDir, false); err != nil || !frozen {
			t.Errorf("after Freeze: frozen %v, %v", frozen, err)
		}
		if err := f.Thaw("web"); err != nil {
			t.Fatal(err)
		}
		if frozen, err := isFrozen(s.CgroupDir, false); err != nil || frozen {
			t.Errorf("after Thaw: frozen %v, %v", frozen, err)
		}
		if err := f.Thaw("web"); err == nil {
			t.Error("thawing a running sandbox succeeded")
		}
	})
	t.Run("thaw resumes a stopped sandbox", func(t *testing.T) {
		s := sandbox(t, &m, "stopped")
		if err := f.Thaw("stopped"); err != nil {
			t.Fatal(err)
		}
		for _, p := range s.Processes {
			if !proctest.Eventually(2*time.Second, func() bool { return mustStat(t, p.PID).State != "T" }) {
				t.Errorf("%s still stopped", p.Role)
			}
		}
	})
	t.Run("unknown sandbox", func(t *testing.T) {
		if err := f.Freeze("no-such-sandbox"); err == nil {
			t.Error("freezing an unknown sandbox succeeded")
		}
	})
}

// TestBulk starts bulk:1000 and checks the count and the leaves' shape.
func TestBulk(t *testing.T) {
	if testing.Short() {
		t.Skip("bulk fleet in -short mode")
	}
	_, m := startFleet(t, Bulk(1000))
	members := 0
	for _, s := range m.Sandboxes {
		members += len(s.Processes)
	}
	if members != 1000 {
		t.Errorf("%d sandbox processes, want 1000", members)
	}
	s := m.Sandboxes[0]
	leaves := s.Role(RoleLeaf)
	if len(leaves) != 9 {
		t.Fatalf("%d leaves in %s, want 9", len(leaves), s.Name)
	}
	l := leaves[0]
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", l.PID)); err != nil || filepath.Base(exe) != "sleep" {
		t.Errorf("leaf exe %s, %v; want the sleep binary", exe, err)
	}
	if got := comm(t, l.PID); got != "worker" {
		t.Errorf("leaf comm %q, want worker", got)
	}
	if ppid := mustStat(t, l.PID).PPID; ppid != s.Root().PID {
		t.Errorf("leaf ppid %d, want the shim %d", ppid, s.Root().PID)
	}
	if s.CgroupDir != "" {
		if got := procCgroup(t, l.PID).Unified; got != s.Cgroup {
			t.Errorf("leaf in %s, want the container's %s", got, s.Cgroup)
		}
	}
}

// TestStartRejectsBadSpec checks that a spec the client can check is
// refused before anything starts, and that one only the owner can check
// (a behaviour on a role the runtime lacks) fails the start and leaves
// nothing behind.
func TestStartRejectsBadSpec(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(t.Context(), Spec{Sandboxes: []SandboxSpec{{Runtime: "lxc"}}}, Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "unknown runtime") {
		t.Fatalf("Start with an unknown runtime: %v", err)
	}
	_, err = Start(t.Context(), Spec{Sandboxes: []SandboxSpec{{Runtime: Docker, On: "nope"}}}, Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), `no member with role "nope"`) {
		t.Fatalf("Start with a bad role: %v", err)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Errorf("failed start left %v in %s (%v)", left, dir, err)
	}
}

// TestStartCancelled cancels the start: Start must fail with the context's
// error, and the owner must clean up what it had begun.
func TestStartCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f, err := Start(ctx, Demo(), Options{Dir: dir})
	if err == nil {
		f.Close()
		t.Fatal("Start with a cancelled context succeeded")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Start: %v, want context.Canceled", err)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Errorf("cancelled start left %v in %s (%v)", left, dir, err)
	}
}

// TestBounceSupervisor: a bounced containerd listens on the same socket
// again under a new identity while its shim runs on; a replaced vm0 runner
// starts its run again under the same ID with new identities.
func TestBounceSupervisor(t *testing.T) {
	t.Parallel()
	spec := Spec{Scenario: "bounce", Sandboxes: []SandboxSpec{
		{Name: "vm", Runtime: VM0},
		{Name: "web", Runtime: Containerd},
	}}
	f, m := startFleet(t, spec)

	web := *sandbox(t, &m, "web") // a copy: the manifest is updated in place
	if err := f.BounceSupervisor("web"); err != nil {
		t.Fatal(err)
	}
	got := f.Manifest().Sandbox("web")
	if got.Supervisor.Identity == web.Supervisor.Identity || got.Orphan {
		t.Errorf("containerd after bounce: %s (was %s), orphan %v", got.Supervisor.Identity, web.Supervisor.Identity, got.Orphan)
	}
	if _, err := readStat(got.Supervisor.PID); err != nil {
		t.Errorf("new containerd %s: %v", got.Supervisor.Identity, err)
	}
	if got.Root().Identity != web.Root().Identity {
		t.Errorf("the shim was restarted (%s, was %s): shims outlive containerd", got.Root().Identity, web.Root().Identity)
	}

	vm := *sandbox(t, &m, "vm")
	if err := f.BounceSupervisor("vm"); err != nil {
		t.Fatal(err)
	}
	nv := f.Manifest().Sandbox("vm")
	if nv.ID != vm.ID || nv.Root().Identity == vm.Root().Identity || nv.Supervisor.Identity == vm.Supervisor.Identity {
		t.Fatalf("vm0 after bounce: id %s root %s runner %s (was %s %s %s)", nv.ID, nv.Root().Identity, nv.Supervisor.Identity, vm.ID, vm.Root().Identity, vm.Supervisor.Identity)
	}
	if st, err := readStat(vm.Root().PID); err == nil && st.Starttime == vm.Root().Start {
		t.Error("the old run survived its runner's replacement")
	}
	if ppid := mustStat(t, nv.Root().PID).PPID; ppid != nv.Supervisor.PID {
		t.Errorf("new run's parent %d, want the new runner %d", ppid, nv.Supervisor.PID)
	}
	// The fleet's own leak check (startFleet's cleanup) covers the
	// restarted processes: Close must reap them too.
	m = f.Manifest()
}
