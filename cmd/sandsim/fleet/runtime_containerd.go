package fleet

import (
	"fmt"
	"strings"
)

// shimBinary is the shim each containerd-based runtime runs.
var shimBinary = map[Runtime]string{
	Containerd: "/usr/bin/containerd-shim-runc-v2",
	Docker:     "/usr/bin/containerd-shim-runc-v2",
	Kubernetes: "/usr/bin/containerd-shim-runc-v2",
	Cloudflare: "/usr/bin/containerd-shim-runc-v2",
	Kata:       "/usr/local/bin/containerd-shim-kata-v2",
	GVisor:     "/usr/local/bin/containerd-shim-runsc-v1",
}

// containerdShim builds a sandbox run by a containerd shim in its daemon
// form, `<shim> -namespace NS -id ID -address SOCK`
// (cmd/containerd-shim-runc-v2/manager/manager_linux.go): the shim starts
// in its own process group, its cwd is the bundle, and it lives in
// containerd's service cgroup next to containerd, which listens on
// -address. What runs below the shim depends on the runtime.
func (b *builder) containerdShim(bp *boxPlan) error {
	svc, err := b.sharedCgroup("system.slice/containerd.service")
	if err != nil {
		return err
	}
	sup, err := b.supervisor(bp, "containerd", func(key string) (*node, error) {
		sock, err := b.socket("run/" + key + ".sock")
		if err != nil {
			return nil, err
		}
		n := b.node("containerd", "/usr/bin/containerd")
		n.Listen, n.Cgroups = sock, svc
		return n, nil
	})
	if err != nil {
		return err
	}
	ns := "k8s.io"
	if bp.m.Runtime == Docker || bp.m.Runtime == Cloudflare {
		ns = "moby" // dockerd's containerd namespace
	}
	shimID := bp.m.ID
	if bp.m.Runtime == Kubernetes {
		// A pod is named by its UID; its shim by the pod sandbox ID.
		shimID = b.ids.hex(64)
		bp.m.AltIDs = append(bp.m.AltIDs, shimID)
	}
	bundle, err := b.mkdir(bp, "containerd/io.containerd.runtime.v2.task/"+ns+"/"+shimID)
	if err != nil {
		return err
	}
	shim := b.node("shim", shimBinary[bp.m.Runtime], "-namespace", ns, "-id", shimID, "-address", sup.Listen)
	shim.Dir, shim.Cgroups, shim.Setpgid = bundle, svc, true
	bp.root, bp.main = shim, shim

	switch bp.m.Runtime {
	case Containerd:
		// containerd's runc shim puts the container in /<ns>/<id>, the
		// namespace as a path component (seen on the real runtime).
		return b.runcContainer(bp, shim, ns+"/"+bp.m.ID,
			b.node("pause", "/pause"),
			b.node("app", "/usr/local/bin/app-server", "--listen", ":8080"))
	case Docker:
		return b.runcContainer(bp, shim, "system.slice/docker-"+bp.m.ID+".scope",
			b.node("app", "nginx", "-g", "daemon off;"))
	case Kubernetes:
		return b.pod(bp, shim, shimID)
	case Cloudflare:
		return b.cloudflare(bp, shim)
	case Kata:
		return b.kata(bp, shim)
	case GVisor:
		return b.gvisor(bp, shim, bundle)
	}
	return fmt.Errorf("%s is not a containerd runtime", bp.m.Runtime)
}

// runcContainer puts the container processes below the shim (runc exits
// after start, and the shim, a subreaper, inherits them) in the
// container's cgroup. The last process is the workload. A bare sandbox
// keeps only the shim, and its leaves become the container's processes.
func (b *builder) runcContainer(bp *boxPlan, shim *node, cgroup string, procs ...*node) error {
	cg, err := b.dedicatedCgroup(bp, cgroup)
	if err != nil {
		return err
	}
	bp.leafParent, bp.leafCgroups = shim, cg
	if bp.m.Spec.Bare {
		return nil
	}
	for _, p := range procs {
		p.Cgroups = cg
	}
	shim.Children = procs
	bp.main = procs[len(procs)-1]
	return nil
}

// pod builds a Kubernetes pod with the systemd cgroup driver: a pod slice
// kubepods-<qos>-pod<uid with '_' for '-'>.slice holding one
// cri-containerd-<id>.scope per container (pkg/kubelet/cm/cgroup_manager_linux.go):
// the pause container and two app containers, the shape the Debian 12
// test host showed (cmd/testhost/guest). The pod slice is the sandbox's
// cgroup; sandtop lists the containers inside it.
func (b *builder) pod(bp *boxPlan, shim *node, sandboxID string) error {
	slice := "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
		strings.ReplaceAll(bp.m.ID, "-", "_") + ".slice"
	if _, err := b.dedicatedCgroup(bp, slice); err != nil {
		return err
	}
	pauseCg, err := b.boxCgroup(bp, slice+"/cri-containerd-"+sandboxID+".scope")
	if err != nil {
		return err
	}
	var appCgs [2][]string
	for i := range appCgs {
		appID := b.ids.hex(64)
		bp.m.AltIDs = append(bp.m.AltIDs, appID)
		if appCgs[i], err = b.boxCgroup(bp, slice+"/cri-containerd-"+appID+".scope"); err != nil {
			return err
		}
	}
	bp.leafParent, bp.leafCgroups = shim, appCgs[0]
	if bp.m.Spec.Bare {
		return nil
	}
	pause := b.node("pause", "/pause")
	app := b.node("app", "/usr/local/bin/server", "--port", "8080")
	sidecar := b.node("sidecar", "/usr/local/bin/log-shipper", "--from", "/var/log/pods")
	pause.Cgroups, app.Cgroups, sidecar.Cgroups = pauseCg, appCgs[0], appCgs[1]
	shim.Children = []*node{pause, app, sidecar}
	bp.main = app
	return nil
}

// cloudflare builds a Cloudflare sandbox SDK container as the host sees
// it: a Docker container whose control server (/container-server/sandbox)
// runs a `bash --norc` session per session (packages/sandbox-container/src/session.ts),
// each command a child of the session with children of its own. Killing
// only the session leaves the lower levels behind (seed 001).
func (b *builder) cloudflare(bp *boxPlan, shim *node) error {
	server := b.node("control-server", "/container-server/sandbox")
	session := b.node("session", "bash", "--norc")
	dev := b.node("command", "bash", "-c", "npm run dev")
	dev.Children = []*node{b.node("command-child", "node", "server.js")}
	job := b.node("command", "bash", "-c", "python3 worker.py &")
	job.Children = []*node{b.node("command-child", "python3", "worker.py")}
	session.Children = []*node{dev, job}
	server.Children = []*node{session}
	if err := b.runcContainer(bp, shim, "system.slice/docker-"+bp.m.ID+".scope", server); err != nil {
		return err
	}
	if !bp.m.Spec.Bare {
		bp.main = session
	}
	return nil
}

// kata builds a Kata Containers sandbox: the shim starts QEMU named
// sandbox-<sid> with its pidfile under /run/vc/vm/<sid>
// (src/runtime/virtcontainers/qemu.go) and virtiofsd next to it.
func (b *builder) kata(bp *boxPlan, shim *node) error {
	id := bp.m.ID
	qemu := b.node("qemu", "/opt/kata/bin/qemu-system-x86_64", "-name", "sandbox-"+id,
		"-uuid", b.ids.uuid(), "-machine", "q35,accel=kvm", "-cpu", "host,pmu=off",
		"-qmp", "unix:fd=3,server=on,wait=off", "-m", "2048M,slots=10,maxmem=16G",
		"-pidfile", "/run/vc/vm/"+id+"/pid", "-smp", "1,cores=1,threads=1,sockets=4,maxcpus=4")
	fsd := b.node("virtiofsd", "/opt/kata/libexec/virtiofsd", "--syslog",
		"--socket-path=/run/vc/vm/"+id+"/vhost-fs.sock",
		"--shared-dir=/run/kata-containers/shared/sandboxes/"+id+"/shared", "--cache=auto")
	shim.Children = []*node{qemu, fsd}
	bp.main = qemu
	return nil
}

// gvisor builds a gVisor sandbox: the runsc shim's sandbox (the Sentry,
// `runsc-sandbox … boot --bundle=… <id>`) and gofer (`runsc-gofer … gofer …`)
// processes. runsc re-executes itself through /proc/self/exe with a
// cosmetic argv[0] (runsc/sandbox/sandbox.go), so the kernel names the
// tasks "exe".
func (b *builder) gvisor(bp *boxPlan, shim *node, bundle string) error {
	id := bp.m.ID
	root, err := b.mkdir(nil, "runsc/k8s.io")
	if err != nil {
		return err
	}
	sentry := b.node("runsc-sandbox", "runsc-sandbox", "--root="+root, "--platform=systrap",
		"--log=/var/log/runsc/"+id+".boot", "boot", "--bundle="+bundle,
		"--controller-fd=10", "--mounts-fd=11", "--start-sync-fd=12", id)
	gofer := b.node("runsc-gofer", "runsc-gofer", "--root="+root, "--platform=systrap",
		"gofer", "--bundle="+bundle, "--io-fds=5", "--mounts-fd=6", "--spec-fd=7")
	sentry.Comm, gofer.Comm = "exe", "exe"
	shim.Children = []*node{sentry, gofer}
	bp.main = sentry
	return nil
}
