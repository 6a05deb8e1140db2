package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc/proctest"
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
	rootfs := proctest.BusyboxRoot(r.t, filepath.Join(d, "rootfs"))
	id := r.tag
	r.t.Cleanup(func() { removeCgroups(id+"/payload", id+"/supervisor", id) })
	r.inCgroup("nspawn", id, "systemd-nspawn", "-q", "-D", rootfs, "-M", id, "--register=no", "--keep-unit",
		"/bin/sh", "-c", "sleep 100001 & exec sleep 100002")
	var sb *model.SandboxJSON
	if !waitUntil(20*time.Second, func() bool { sb = r.sandbox("nspawn:" + id); return sb != nil && len(sb.Processes) >= 3 }) {
		r.skip("systemd-nspawn did not start its payload: %s", r.logOf("nspawn"))
	}
	r.wantOneMachine(id, "/"+id)
	r.kill(0, "--force", "--grace", "2s", id)
	r.wantGone("nspawn machine", identities(sb))

	// --keep-unit in a machine scope of its own (as systemd-run --scope
	// --unit machine-<name> would start it; made by hand here, where no
	// systemd runs), with a name too short to count as a token of a path:
	// nspawn, its supervisor and payload sub-cgroups, one sandbox whose
	// cgroup is the machine's scope.
	name := "m" + randHex(2)
	rel := "machine.slice/machine-" + name + ".scope"
	slice := "/sys/fs/cgroup/unified/machine.slice"
	madeSlice := !dirExists(slice)
	r.cgroups = append(r.cgroups, rel)
	r.t.Cleanup(func() {
		removeCgroups(rel+"/payload", rel+"/supervisor", rel)
		if madeSlice {
			_ = syscall.Rmdir(slice) // fails, and stays, if anyone else uses it
		}
	})
	r.inCgroup("nspawn-scope", rel, "systemd-nspawn", "-q", "-D", rootfs, "-M", name, "--register=no", "--keep-unit",
		"/bin/sh", "-c", "sleep 100003 & exec sleep 100004")
	if !waitUntil(20*time.Second, func() bool { sb = r.sandbox("nspawn:" + name); return sb != nil && len(sb.Processes) >= 3 }) {
		r.t.Fatalf("systemd-nspawn in %s: no sandbox nspawn:%s with its payload: %s", rel, name, r.logOf("nspawn-scope"))
	}
	r.wantOneMachine(name, "/"+rel)
	if _, out, _ := sandtop(r.t, "kill", "--dry-run", name); !strings.Contains(out, "/"+rel+" (dedicated") {
		r.t.Errorf("kill --dry-run %s:\n%s", name, out)
	} else {
		r.t.Logf("kill --dry-run %s:\n%s", name, out)
	}
	r.kill(0, "--force", "--grace", "2s", name)
	r.wantGone("nspawn machine in its scope", identities(sb))
}

// wantOneMachine fails unless the machine name is exactly one sandbox,
// nspawn's, with this dedicated cgroup.
func (r *rt) wantOneMachine(name, cgroup string) {
	r.t.Helper()
	var keys []string
	for _, s := range r.doc().Sandboxes {
		if s.ID == name {
			keys = append(keys, s.Key)
			if s.Runtime != "nspawn" || s.Cgroup != cgroup {
				r.t.Errorf("machine %s: runtime %q cgroup %q, want nspawn in %s", name, s.Runtime, s.Cgroup, cgroup)
			}
		}
	}
	if len(keys) != 1 {
		r.t.Errorf("machine %s is the sandboxes %q, want one", name, keys)
	}
}
