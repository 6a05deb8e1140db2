package fleet

import "path/filepath"

// podman builds a podman container as podman 4 with the cgroupfs manager
// leaves it (seen on the real runtime, RUNTIMES.md): no daemon; conmon,
// double-forked (PPID 1 on a real host, a session of its own), is the
// root, in libpod_parent/conmon, started by
// `conmon --api-version 1 -c <id> -u <id> -r /usr/bin/runc -b <bundle>
// -p <pidfile> -n <name> … --exit-command /usr/bin/podman … container
// cleanup <id>` (containers/podman libpod/oci_conmon_linux.go); the
// container's processes are its children in libpod_parent/libpod-<id>.
//
// With SystemdCgroups it is laid out as podman 4.3 with the systemd manager
// and crun left it from a login shell on the Debian 12 test host: conmon in
// machine.slice/libpod-conmon-<id>.scope, the container in
// machine.slice/libpod-<id>.scope/container (crun's sub-cgroup), and
// machine.slice shared by every machine.
func (b *builder) podman(bp *boxPlan) error {
	id := bp.m.ID
	conmonCg, err := b.sharedCgroup("libpod_parent/conmon")
	container := "libpod_parent/libpod-" + id
	if bp.m.Spec.SystemdCgroups {
		conmonCg, err = b.boxCgroup(bp, "machine.slice/libpod-conmon-"+id+".scope")
		container = "machine.slice/libpod-" + id + ".scope/container"
	}
	if err != nil {
		return err
	}
	userdata, err := b.mkdir(bp, "containers/storage/vfs-containers/"+id+"/userdata")
	if err != nil {
		return err
	}
	exits, err := b.mkdir(nil, "run/libpod/exits")
	if err != nil {
		return err
	}
	root := filepath.Join(b.env.base, "containers/storage")
	runroot := filepath.Join(b.env.base, "run/containers/storage")
	exit := func(args ...string) []string {
		var out []string
		for _, a := range args {
			out = append(out, "--exit-command-arg", a)
		}
		return out
	}
	argv := []string{"/usr/bin/conmon", "--api-version", "1", "-c", id, "-u", id, "-r", "/usr/bin/runc",
		"-b", userdata, "-p", filepath.Join(userdata, "pidfile"), "-n", bp.m.Name,
		"--exit-dir", exits, "--full-attach", "-s",
		"-l", "k8s-file:" + filepath.Join(userdata, "ctr.log"), "--log-level", "warning",
		"--runtime-arg", "--log-format=json", "--runtime-arg", "--log",
		"--runtime-arg=" + filepath.Join(userdata, "oci-log"),
		"--conmon-pidfile", filepath.Join(userdata, "conmon.pid"),
		"--exit-command", "/usr/bin/podman"}
	argv = append(argv, exit("--root", root, "--runroot", runroot, "--log-level", "warning",
		"--cgroup-manager", "cgroupfs", "--tmpdir", filepath.Join(b.env.base, "run/libpod"), "--runtime", "runc", "--storage-driver", "vfs",
		"--events-backend", "file", "container", "cleanup", id)...)
	conmon := b.node("conmon", argv...)
	conmon.Dir, conmon.Cgroups, conmon.Setsid = userdata, conmonCg, true
	if d := bp.m.Spec.ConmonExit; d > 0 {
		conmon.ExitAfter = &exitAfter{Delay: d, File: filepath.Join(exits, id), Cleanup: bp.m.Spec.ConmonCleanup}
	}
	bp.root, bp.main = conmon, conmon
	return b.runcContainer(bp, conmon, container,
		b.node("app", "/bin/sh", "-c", "exec httpd -f"))
}
