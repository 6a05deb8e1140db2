package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc/proctest"
)

// docker runs Debian's dockerd (20.10) on private roots (--data-root,
// --exec-root, --pidfile, its socket), with the containerd it manages
// under its exec-root, no bridge and no iptables, and an image made
// offline by docker import of the busybox rootfs; the client is Debian's
// /usr/bin/docker (DOCKER_API_VERSION pins the API: /usr/local/bin/docker
// is newer than the daemon). It checks: the container is a docker
// sandbox keyed by its 64-hex ID with its /docker/<id> cgroup and the
// -namespace moby shim as root; docker pause makes it paused with the
// shim not frozen; a graceful kill of the paused container and a
// --grace 0 kill of another take each down with the bystander alive,
// and docker sees both as Exited (137) and removes them.
func (r *rt) docker() {
	r.need("dockerd", "/usr/bin/docker", "containerd", "containerd-shim-runc-v2", "runc")
	d := r.shortDir()
	sock := filepath.Join(d, "d.sock")
	daemon := r.daemon("dockerd", "dockerd",
		"--data-root", filepath.Join(d, "data"), "--exec-root", filepath.Join(d, "ex"),
		"--pidfile", filepath.Join(d, "d.pid"), "-H", "unix://"+sock,
		"--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-masq=false",
		"--storage-driver", "vfs", "--shutdown-timeout", "5")
	dk := func(args ...string) []string {
		return append([]string{"/usr/bin/docker", "-H", "unix://" + sock}, args...)
	}
	if !waitUntil(60*time.Second, func() bool {
		_, err := r.try(dk("version")...)
		return err == nil
	}) {
		r.skip("dockerd did not answer on %s: %s", sock, r.logOf("dockerd"))
	}
	_ = daemon

	rootfs := proctest.BusyboxRoot(r.t, filepath.Join(d, "rootfs"))
	tar := filepath.Join(d, "rootfs.tar")
	r.cmd("tar", "-C", rootfs, "-cf", tar, ".")
	image := r.tag + ":1"
	r.cmd(dk("import", tar, image)...)

	var ids []string
	r.t.Cleanup(func() {
		for _, id := range ids {
			_, _ = r.try(dk("rm", "--force", id)...)
		}
		_, _ = r.try(dk("rmi", "--force", image)...)
		// dockerd removes a container's cgroup when its task dies; one a
		// failed test left behind goes here (the /docker parent is
		// shared with other dockerds and stays).
		removeCgroups(r.cgroups...)
	})
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	run := func(name, script string) string {
		out := r.cmd(dk("run", "-d", "--name", name, "--network", "none", image, "/bin/sh", "-c", script)...)
		f := strings.Fields(out)
		if len(f) == 0 || !hex64.MatchString(f[len(f)-1]) {
			r.t.Fatalf("docker run %s: no container ID in %q", name, out)
		}
		ids = append(ids, f[len(f)-1])
		r.cgroups = append(r.cgroups, "docker/"+f[len(f)-1])
		return f[len(f)-1]
	}
	target := run(r.tag+"-t", "sleep 100011 & exec sleep 100012")
	quick := run(r.tag+"-q", "sleep 100013 & exec sleep 100014")
	other := run(r.tag+"-o", "exec sleep 100015")

	key := func(id string) string { return "docker:moby/" + id }
	for _, id := range []string{target, quick} {
		sb := r.mustSandbox(key(id), 3)
		if sb.Runtime != "docker" || sb.ID != id || sb.Namespace != "moby" || sb.Cgroup != "/docker/"+id ||
			len(sb.Badges) != 0 || !strings.Contains(strings.Join(sb.Processes[0].Argv, " "), "containerd-shim") {
			r.t.Errorf("docker container %s: %+v", id, sb)
		}
	}
	bystanders := identities(r.mustSandbox(key(other), 2))

	// docker pause freezes the container's cgroup, not the shim.
	r.cmd(dk("pause", target)...)
	var p *model.SandboxJSON
	waitUntil(10*time.Second, func() bool {
		p = r.sandbox(key(target))
		return p != nil && hasBadge(p, model.BadgePaused)
	})
	if p == nil || !hasBadge(p, model.BadgePaused) || !p.Frozen || !strings.Contains(p.Paused, "workload frozen") {
		r.t.Fatalf("docker pause: %+v", p)
	}
	if frozenCgroupOf(p.RootPID) {
		r.t.Errorf("docker pause: the shim %d is in a frozen cgroup", p.RootPID)
	}

	// Graceful kill of the paused container (thawed to be signalled).
	r.kill(0, "--force", "--grace", "2s", target)
	r.wantGone("paused docker container", identities(p))
	r.wantAlive("kill of the paused docker container", bystanders)

	// --grace 0 of the other.
	q := r.mustSandbox(key(quick), 3)
	r.kill(0, "--force", "--grace", "0", quick)
	r.wantGone("docker container killed with --grace 0", identities(q))
	r.wantAlive("kill --grace 0 of a docker container", bystanders)

	// Killed while containerd and dockerd live: cleaning up after the
	// container (its cgroup) is theirs, so neither is a leftover row, at
	// once or later.
	for range 3 {
		for _, sb := range listJSON(r.t).Sandboxes {
			if (sb.ID == target || sb.ID == quick) && hasBadge(&sb, model.BadgeLeftover) {
				r.t.Errorf("killed container %s with its runtime alive is listed as a leftover: %s, %+v", sb.ID, sb.Key, sb.Leftovers)
			}
		}
		time.Sleep(300 * time.Millisecond)
	}

	// The runtime's own view: both exited on SIGKILL, and removable.
	for _, id := range []string{target, quick} {
		var st string
		if !waitUntil(20*time.Second, func() bool {
			st = r.cmd(dk("ps", "-a", "--no-trunc", "--filter", "id="+id, "--format", "{{.Status}}")...)
			return strings.HasPrefix(st, "Exited (137)")
		}) {
			r.t.Errorf("docker ps -a after the kill of %s: %q, want Exited (137)", id, st)
		}
		r.cmd(dk("rm", id)...)
	}
	if st := r.cmd(dk("ps", "--no-trunc", "--filter", "id="+other, "--format", "{{.Status}}")...); !strings.HasPrefix(st, "Up") {
		r.t.Errorf("the bystander container after the kills: %q, want Up", st)
	}
}

// frozenCgroupOf reports whether pid is in a frozen cgroup: the v1
// freezer's state or cgroup v2's cgroup.freeze.
func frozenCgroupOf(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[1] == "freezer":
			s, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup/freezer", f[2], "freezer.state"))
			if strings.TrimSpace(string(s)) != "THAWED" && len(s) > 0 {
				return true
			}
		case f[0] == "0" && f[1] == "":
			for _, m := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
				if s, err := os.ReadFile(filepath.Join(m, f[2], "cgroup.freeze")); err == nil && strings.TrimSpace(string(s)) == "1" {
					return true
				}
			}
		}
	}
	return false
}
