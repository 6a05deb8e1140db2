package teardown

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// A rootless podman container's reconcile runs as the user whose conmon
// watches it (its --root names that user's storage); a standalone runc
// container's stays sandtop's own, whatever uid the container's init runs
// as. The plan says whom it runs as.
func TestReconcileOwner(t *testing.T) {
	id := "7d3f0c5e1b2a4d6f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7"
	scope := "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + id + ".scope"
	conmon := "/usr/bin/conmon --api-version 1 -c " + id + " -u " + id + " -r /usr/bin/crun -b /home/st/.local/share/containers/storage/overlay-containers/" + id +
		"/userdata -n rootless-1 --exit-command /usr/bin/podman --exit-command-arg --root --exit-command-arg /home/st/.local/share/containers/storage" +
		" --exit-command-arg --runroot --exit-command-arg /run/user/1000/containers --exit-command-arg --tmpdir --exit-command-arg /run/user/1000/libpod/tmp" +
		" --exit-command-arg container --exit-command-arg cleanup --exit-command-arg " + id
	snap := modeltest.Snapshot(proc.Snapshot{Self: 1 << 30},
		modeltest.Proc(500, 1, "/lib/systemd/systemd --user", modeltest.UID(1000), modeltest.Cgroup("/user.slice/user-1000.slice/user@1000.service/init.scope")),
		modeltest.Proc(600, 500, conmon, modeltest.UID(1000), modeltest.Cgroup("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-conmon-"+id+".scope")),
		modeltest.Proc(601, 600, "sleep 100000", modeltest.UID(1000), modeltest.Cgroup(scope+"/container"), modeltest.NSpid(601, 1)),
		modeltest.Proc(700, 1, "sleep 100001", modeltest.UID(1000), modeltest.Cgroup("/rcx1"), modeltest.NSpid(700, 1)),
	)
	v := model.Build(snap, model.Presets(), nil)
	for _, tc := range []struct {
		id   string
		want int // -1: sandtop's own
	}{{id, 1000}, {"rcx1", -1}} {
		sb, err := v.Resolve(tc.id)
		if err != nil {
			t.Fatalf("resolve %s: %v", tc.id, err)
		}
		p, err := PlanSandbox(v, sb, PlanOptions{})
		if err != nil {
			t.Fatalf("plan %s: %v", tc.id, err)
		}
		if len(p.Reconcile) == 0 {
			t.Fatalf("%s: no reconcile command", tc.id)
		}
		got := -1
		if p.ReconcileAs != nil {
			got = *p.ReconcileAs
		}
		if got != tc.want {
			t.Errorf("%s: reconcile %v runs as uid %d, want %d", tc.id, p.Reconcile, got, tc.want)
		}
		if said := p.Facts().Reconcile; (tc.want >= 0) != strings.Contains(said, " as ") {
			t.Errorf("%s: the plan says the reconcile is %q", tc.id, said)
		}
	}
}

// RunReconcile runs the command as its owner, with the owner's
// environment (not sandtop's), and not at all when the owner has no
// passwd entry.
func TestReconcileRunsAsOwner(t *testing.T) {
	proctest.RequireRoot(t)
	nobody := 65534
	p := &Plan{Target: "c1", Runtime: "podman", ReconcileAs: &nobody,
		Reconcile: []string{"/bin/sh", "-c", `echo "$(id -u) $(id -g) $USER $HOME ${SANDTOP_SECRET:-clean}"`}}
	t.Setenv("SANDTOP_SECRET", "leaked")
	ev := RunReconcile(context.Background(), p, func(Event) {})
	if ev.Status != OK || !strings.HasSuffix(ev.Detail, ": 65534 65534 nobody /nonexistent clean") || !strings.Contains(ev.Detail, " as nobody (uid 65534)") {
		t.Errorf("reconcile as nobody: %s %s", ev.Status, ev.Detail)
	}

	stranger := 1<<31 - 7
	marker := filepath.Join(t.TempDir(), "ran")
	p = &Plan{Target: "c2", Runtime: "podman", ReconcileAs: &stranger, Reconcile: []string{"/usr/bin/touch", marker}}
	ev = RunReconcile(context.Background(), p, func(Event) {})
	if _, err := os.Stat(marker); err == nil || ev.Status != Fail || !strings.Contains(ev.Detail, "no passwd entry") {
		t.Errorf("reconcile as a uid with no passwd entry: %s %s (ran: %v)", ev.Status, ev.Detail, err == nil)
	}
}

// A lazy scan (kill's) leaves a process's uid unread, as 0: the owner is
// read from /proc then, from the very process (its identity checked), and
// is unknown (-1, nothing runs) once that process is gone.
func TestReconcileOwnerReadsUnreadUID(t *testing.T) {
	proctest.RequireRoot(t)
	cmd := exec.Command("sleep", "100")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	id, _, err := proc.ReadIdentity("/proc", cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	sb := &model.Sandbox{Root: &model.Member{
		Process: &proc.Process{PID: id.PID, Start: id.Start, Unread: proc.FieldStatus},
		Via:     model.ViaRule, MatchedBy: model.ByFlag,
	}}
	if got := reconcileOwner(sb, "/proc"); got == nil || *got != 65534 {
		t.Errorf("owner of a lazily scanned process of nobody's: %v, want 65534", got)
	}
	sb.Root.Start++
	if got := reconcileOwner(sb, "/proc"); got == nil || *got != -1 {
		t.Errorf("owner of a pid whose process is not the one scanned: %v, want -1", got)
	}
	cmd.Process.Kill()
	cmd.Wait()
	sb.Root.Start--
	if got := reconcileOwner(sb, "/proc"); got == nil || *got != -1 {
		t.Errorf("owner of a process gone: %v, want -1", got)
	}
	unknown := -1
	ev := RunReconcile(context.Background(), &Plan{Target: "c3", Runtime: "podman", ReconcileAs: &unknown, Reconcile: []string{"/bin/true"}}, func(Event) {})
	if ev.Status != Fail || !strings.Contains(ev.Detail, "could not be read") {
		t.Errorf("reconcile with its owner unknown: %s %s", ev.Status, ev.Detail)
	}
}
