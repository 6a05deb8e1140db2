package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc/proctest"
)

// podman runs podman 4 with private storage (--root, --runroot, --tmpdir),
// runc as its runtime (Debian's crun 1.8 refuses hybrid cgroups) and the
// cgroupfs manager, and checks: conmon is the root and the ID is its -c,
// the name an alias; podman pause makes the sandbox paused with conmon
// running; kill --pid <conmon> on the paused container thaws its
// libpod-<id> cgroup (every process in it is the target's) and succeeds;
// what podman then says is logged from its own ps (it may or may not have
// noticed), and kill --reconcile tells it: the container is gone from
// podman ps -a.
func (r *rt) podman() {
	pm, runC := r.podmanEnv()
	r.podmanChecks(pm, runC)
}

// podmanEnv sets up a private podman (storage, image) for this run and
// returns a podman command and a way to start a detached container; all
// of it is removed at cleanup.
func (r *rt) podmanEnv() (pm func(args ...string) string, runC func(name, script string) string) {
	r.need("podman", "conmon", "runc")
	d := r.shortDir()
	rootfs := proctest.BusyboxRoot(r.t, filepath.Join(d, "rootfs"))
	global := []string{"podman", "--root", filepath.Join(d, "root"), "--runroot", filepath.Join(d, "run"), "--tmpdir", filepath.Join(d, "tmp"),
		"--cgroup-manager", "cgroupfs", "--runtime", "runc", "--events-backend", "file", "--storage-driver", "vfs"}
	pm = func(args ...string) string { return r.cmd(append(append([]string{}, global...), args...)...) }
	tar := filepath.Join(d, "rootfs.tar")
	r.cmd("tar", "-C", rootfs, "-cf", tar, ".")
	image := "localhost/" + r.tag + ":1"
	if out, err := r.try(append(append([]string{}, global...), "import", tar, image)...); err != nil {
		r.skip("podman import: %v: %s", err, out)
	}
	r.t.Cleanup(func() {
		// The first rm after an out-of-band kill can fail: try twice.
		for range 2 {
			_, _ = r.try(append(append([]string{}, global...), "rm", "--all", "--force", "--time", "0")...)
		}
		_, _ = r.try(append(append([]string{}, global...), "rmi", "--all", "--force")...)
		removeCgroups("libpod_parent/conmon", "libpod_parent")
	})
	runC = func(name, script string) string {
		out, err := r.try(append(append([]string{}, global...), "run", "-d", "--name", name, "--network", "none",
			"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", image, "/bin/sh", "-c", script)...)
		if err != nil {
			r.skip("podman run: %v: %s", err, out)
		}
		lines := strings.Fields(out)
		id := lines[len(lines)-1]
		// podman rm can leave runc's state of a container killed behind
		// its back in /run/runc: delete it after podman's cleanup.
		r.t.Cleanup(func() { _, _ = r.try("runc", "delete", "--force", id) })
		return id
	}
	return pm, runC
}

func (r *rt) podmanChecks(pm func(args ...string) string, runC func(name, script string) string) {
	paused := runC(r.tag+"-p", "sleep 100001 & exec sleep 100002")
	other := runC(r.tag+"-o", "exec sleep 100003")

	sb := r.mustSandbox("podman:"+paused, 3)
	if sb.Cgroup != "/libpod_parent/libpod-"+paused || sb.Runtime != "podman" || len(sb.Badges) != 0 ||
		!strings.Contains(strings.Join(sb.Processes[0].Argv, " "), "conmon") {
		r.t.Errorf("podman container: %+v", sb)
	}
	if code, out, errOut := sandtop(r.t, "kill", "--dry-run", r.tag+"-p"); code != 0 || !strings.Contains(out, "podman:") && !strings.Contains(out, paused) {
		r.t.Errorf("kill --dry-run by the container name: exit %d\n%s%s", code, out, errOut)
	}
	pm("pause", paused)
	var p *model.SandboxJSON
	waitUntil(10*time.Second, func() bool {
		p = r.sandbox("podman:" + paused)
		return p != nil && hasBadge(p, model.BadgePaused)
	})
	if p == nil || !hasBadge(p, model.BadgePaused) || !strings.Contains(p.Paused, "workload frozen") {
		r.t.Fatalf("podman pause: %+v", p)
	}
	bystanders := identities(r.mustSandbox("podman:"+other, 2))
	out := r.kill(0, "--force", "--grace", "1s", "--pid", strconv.Itoa(p.RootPID))
	if !strings.Contains(out, "every process in it is the target's") {
		r.t.Errorf("kill --pid <conmon> of a paused container: no thaw of its cgroup:\n%s", out)
	}
	r.wantGone("paused podman container", identities(p))
	r.wantAlive("kill --pid conmon", bystanders)
	if ps := pm("ps", "--format", "{{.ID}} {{.Status}}"); !strings.Contains(ps, paused[:12]) {
		r.t.Logf("podman noticed the kill by itself: %s", ps)
	}

	// kill --reconcile: podman is told, and forgets the container.
	o := r.mustSandbox("podman:"+other, 2)
	if len(o.Reconcile) == 0 || o.Reconcile[0] != "podman" || !strings.Contains(strings.Join(o.Reconcile, " "), "rm --force "+other) {
		r.t.Errorf("reconcile %q", o.Reconcile)
	}
	out = r.kill(0, "--force", "--grace", "1s", "--reconcile", r.tag+"-o")
	if !strings.Contains(out, "reconcile") || !strings.Contains(out, "[OK]   reconcile") {
		r.t.Errorf("kill --reconcile:\n%s", out)
	}
	r.wantGone("podman container", identities(o))
	if ps := pm("ps", "-a", "--format", "{{.ID}}"); strings.Contains(ps, other[:12]) {
		r.t.Errorf("podman still lists the reconciled container:\n%s", ps)
	}
}

// runc runs a standalone container (runc run -d, no daemon: runc exits and
// PID 1 adopts the container's init) and checks: the runc sandbox in
// /<id>, the done step's reconcile command, kill --reconcile running
// runc delete --force, and runc list forgetting it.
func (r *rt) runc() {
	r.need("runc")
	d := r.shortDir()
	bundle := filepath.Join(d, "bundle")
	proctest.BusyboxRoot(r.t, filepath.Join(bundle, "rootfs"))
	r.cmd("runc", "spec", "--bundle", bundle)
	var spec map[string]any
	b, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err == nil {
		err = json.Unmarshal(b, &spec)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	process := spec["process"].(map[string]any)
	process["terminal"] = false
	process["args"] = []string{"/bin/sh", "-c", "sleep 100001 & exec sleep 100002"}
	b, _ = json.Marshal(spec)
	r.writeFile(filepath.Join(bundle, "config.json"), string(b), 0o644)
	id := r.tag
	if out, err := r.try("runc", "run", "-d", "--bundle", bundle, id); err != nil {
		r.skip("runc run -d: %v: %s", err, out)
	}
	r.t.Cleanup(func() {
		_, _ = r.try("runc", "delete", "--force", id)
		removeCgroups(id)
	})
	sb := r.mustSandbox("runc:"+id, 2)
	if sb.Cgroup != "/"+id || len(sb.Badges) != 0 {
		r.t.Errorf("runc container: cgroup %q badges %v", sb.Cgroup, sb.Badges)
	}
	out := r.kill(0, "--force", "--grace", "0", "--reconcile", id)
	if !strings.Contains(out, "run runc delete --force "+id) || !strings.Contains(out, "[OK]   reconcile") {
		r.t.Errorf("kill --reconcile of a runc container:\n%s", out)
	}
	r.wantGone("runc container", identities(sb))
	if list := r.cmd("runc", "list", "-q"); strings.Contains(list, id) {
		r.t.Errorf("runc list still has %s after the reconcile:\n%s", id, list)
	}

	// Where runc run -d from a systemd service puts it (the caller's
	// parent slice): cgroupsPath /system.slice/<id>. It is runc's, with
	// runc's reconcile, not a containerd orphan in namespace system.slice.
	slice := id + "s"
	made := map[string]bool{}
	for _, h := range cgroupHierarchies() {
		made[h] = !dirExists(filepath.Join(h, "system.slice"))
	}
	spec["linux"].(map[string]any)["cgroupsPath"] = "/system.slice/" + slice
	b, _ = json.Marshal(spec)
	r.writeFile(filepath.Join(bundle, "config.json"), string(b), 0o644)
	if out, err := r.try("runc", "run", "-d", "--bundle", bundle, slice); err != nil {
		r.t.Fatalf("runc run -d with cgroupsPath /system.slice/%s: %v: %s", slice, err, out)
	}
	r.t.Cleanup(func() {
		_, _ = r.try("runc", "delete", "--force", slice)
		removeCgroups("system.slice/" + slice)
		for h, mine := range made {
			if mine {
				_ = syscall.Rmdir(filepath.Join(h, "system.slice")) // fails, and stays, if anyone else uses it
			}
		}
	})
	if sb := r.sandbox("containerd:system.slice/" + slice); sb != nil {
		r.t.Errorf("runc's /system.slice/%s is a containerd sandbox: %+v", slice, sb)
	}
	ss := r.mustSandbox("runc:"+slice, 2)
	if ss.Cgroup != "/system.slice/"+slice || len(ss.Badges) != 0 {
		r.t.Errorf("runc container in /system.slice: cgroup %q badges %v", ss.Cgroup, ss.Badges)
	}
	if _, out, _ := sandtop(r.t, "kill", "--dry-run", slice); !strings.Contains(out, "runc delete --force "+slice) {
		r.t.Errorf("kill --dry-run of the runc container in /system.slice:\n%s", out)
	} else {
		r.t.Logf("kill --dry-run %s:\n%s", slice, out)
	}
	out = r.kill(0, "--force", "--grace", "0", "--reconcile", slice)
	if !strings.Contains(out, "[OK]   reconcile") {
		r.t.Errorf("kill --reconcile of the runc container in /system.slice:\n%s", out)
	}
	r.wantGone("runc container in /system.slice", identities(ss))
	if list := r.cmd("runc", "list", "-q"); strings.Contains(list, slice) {
		r.t.Errorf("runc list still has %s after the reconcile:\n%s", slice, list)
	}
}

// cgroupHierarchies are the mounted cgroup hierarchies' directories.
func cgroupHierarchies() []string {
	hs, _ := filepath.Glob("/sys/fs/cgroup/*")
	var out []string
	for _, h := range append(hs, "/sys/fs/cgroup") {
		if dirExists(h) && (fileExists(filepath.Join(h, "cgroup.procs"))) {
			out = append(out, h)
		}
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
