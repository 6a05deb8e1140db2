package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sandtop/sandtop/model"
)

// inCgroup runs argv as a daemon inside the v2 cgroup rel (made here and
// removed at cleanup): a shell writes itself into cgroup.procs and execs.
func (r *rt) inCgroup(name, rel string, argv ...string) *daemonProc {
	r.t.Helper()
	dir := filepath.Join("/sys/fs/cgroup/unified", rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.skip("no cgroup v2 directory %s: %v", dir, err)
	}
	script := `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`
	return r.daemon(name, append([]string{"/bin/sh", "-c", script, "sh", dir}, argv...)...)
}

// bwrap lays a box out as boxlite does (an outer bwrap, an inner one that
// opens a pid namespace, the shim copied into boxes/<id>/bin, the box's
// own boxlite/<id> cgroup) and checks: the boxlite sandbox with its three
// processes and its cgroup; after the outer bwrap alone is SIGKILLed, the
// inner bwrap and the shim are still that sandbox, and kill takes them
// down.
func (r *rt) bwrap() {
	r.need("bwrap", "sleep")
	d := r.shortDir()
	id := r.tag
	box := filepath.Join(d, "home/.boxlite/boxes", id)
	sleep, _ := os.ReadFile("/usr/bin/sleep")
	r.writeFile(filepath.Join(box, "bin/boxlite-shim"), string(sleep), 0o755)
	shim := filepath.Join(box, "bin/boxlite-shim")
	binds := []string{"--ro-bind", "/usr", "/usr", "--ro-bind", "/lib", "/lib", "--ro-bind", "/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--bind", box, box}
	if _, err := os.Stat("/lib64"); err == nil {
		binds = append(binds, "--ro-bind", "/lib64", "/lib64")
	}
	inner := append(append([]string{"/usr/bin/bwrap", "--unshare-pid"}, binds...), "--", shim, "100001")
	outer := append(append([]string{"bwrap"}, binds...), append([]string{"--"}, inner...)...)
	rel := "boxlite/" + id
	r.t.Cleanup(func() {
		removeCgroups(rel)
		_ = syscall.Rmdir("/sys/fs/cgroup/unified/boxlite") // only when no other box uses it
	})
	dp := r.inCgroup("bwrap", rel, outer...)
	sb := r.mustSandbox("boxlite:"+id, 3)
	if sb.Cgroup != "/"+rel || sb.Runtime != "boxlite" {
		r.t.Errorf("boxlite box: runtime %q cgroup %q", sb.Runtime, sb.Cgroup)
	}
	// The outer bwrap killed alone: what is left is still the box.
	dp.crash()
	var left *model.SandboxJSON
	waitUntil(10*time.Second, func() bool {
		left = r.sandbox("boxlite:" + id)
		return left != nil && left.RootPID != sb.RootPID
	})
	if left == nil || len(left.Processes) < 2 {
		r.t.Fatalf("outer bwrap killed: the rest of the box is not a sandbox: %+v", left)
	}
	r.kill(0, "--force", "--grace", "1s", id)
	r.wantGone("boxlite box", identities(left))
}

// qemu runs QEMU as Kata names it (-name sandbox-<id>), with no machine
// and its CPUs stopped (-machine none -S): the kata sandbox, an orphan
// (no kata shim above it), and kill --grace 0 takes it down.
func (r *rt) qemu() {
	r.need("qemu-system-x86_64")
	id := r.tag
	d := r.daemon("qemu", "qemu-system-x86_64", "-name", "sandbox-"+id+",debug-threads=on", "-machine", "none", "-S",
		"-nodefaults", "-nographic", "-display", "none", "-monitor", "none", "-serial", "none", "-pidfile", filepath.Join(r.dir, "qemu.pid"))
	r.t.Cleanup(func() {
		if !r.t.Failed() {
			return
		}
		state := "still running"
		select {
		case <-d.done:
			state = "exited"
		default:
		}
		r.t.Logf("QEMU (pid %d) %s; its log: %q", d.cmd.Process.Pid, state, r.logOf("qemu"))
	})
	var sb *model.SandboxJSON
	// The suite's steady scanner must show it: a scan that catches QEMU
	// inside execve (new comm, no argv yet) once kept it unrecognised.
	if !waitUntil(20*time.Second, func() bool { sb = r.sandbox("kata:" + id); return sb != nil }) {
		r.t.Fatalf("no sandbox kata:%s after 20 s, QEMU pid %d", id, d.cmd.Process.Pid)
	}
	if !hasBadge(sb, model.BadgeOrphan) || !strings.Contains(sb.Supervisor, "supervisor gone") {
		r.t.Errorf("QEMU without its kata shim: badges %v, supervisor %q", sb.Badges, sb.Supervisor)
	}
	r.kill(0, "--force", "--grace", "0", id)
	r.wantGone("QEMU", identities(sb))
}

// nspawn runs systemd-nspawn without machined (--register=no --keep-unit,
// as it must here, with no systemd as PID 1) in a cgroup of its own, and
// checks: the nspawn sandbox named by -M with its payload (which sits in
// <cgroup>/payload, a two-level path, and is still nspawn's), and a
// graceful kill.
func (r *rt) nspawn() {
	r.need("systemd-nspawn")
	d := r.shortDir()
	rootfs := r.rootfs(filepath.Join(d, "rootfs"))
	id := r.tag
	r.t.Cleanup(func() { removeCgroups(id+"/payload", id+"/supervisor", id) })
	r.inCgroup("nspawn", id, "systemd-nspawn", "-q", "-D", rootfs, "-M", id, "--register=no", "--keep-unit",
		"/bin/sh", "-c", "sleep 100001 & exec sleep 100002")
	var sb *model.SandboxJSON
	if !waitUntil(20*time.Second, func() bool { sb = r.sandbox("nspawn:" + id); return sb != nil && len(sb.Processes) >= 3 }) {
		r.skip("systemd-nspawn did not start its payload: %s", r.logOf("nspawn"))
	}
	r.kill(0, "--force", "--grace", "2s", id)
	r.wantGone("nspawn machine", identities(sb))
}
