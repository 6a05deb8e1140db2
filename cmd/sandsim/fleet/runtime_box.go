package fleet

import (
	"fmt"
	"path/filepath"
)

// boxlite builds a box: outer bwrap -> inner bwrap -> boxlite-shim, all in
// the box's cgroup boxlite/<id> (src/boxlite/src/jailer/cgroup.rs). bwrap
// --unshare-pid clones its child into a new pid namespace without exec, so
// the inner bwrap (the namespace's init) has the outer one's argv; it then
// forks the command, the per-box copy of the shim at
// <home>/.boxlite/boxes/<id>/bin/boxlite-shim (jailer/shim_copy.rs).
// --die-with-parent ties the inner bwrap to the outer one; detached boxes
// go without it, which is why killing the outer bwrap alone leaks the rest
// (seed 002).
func (b *builder) boxlite(bp *boxPlan) error {
	id := bp.m.ID
	box, err := b.mkdir(bp, "home/.boxlite/boxes/"+id)
	if err != nil {
		return err
	}
	if _, err := b.mkdir(nil, "home/.boxlite/boxes/"+id+"/bin"); err != nil {
		return err
	}
	cg, err := b.dedicatedCgroup(bp, "boxlite/"+id)
	if err != nil {
		return err
	}
	shimPath := filepath.Join(box, "bin", "boxlite-shim")
	argv := []string{"bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"}
	if !bp.m.Spec.Detached {
		argv = append(argv, "--die-with-parent")
	}
	argv = append(argv, "--new-session",
		"--ro-bind", "/usr", "/usr", "--ro-bind", "/bin", "/bin", "--ro-bind", "/lib", "/lib",
		"--dev", "/dev", "--dev-bind", "/dev/kvm", "/dev/kvm", "--proc", "/proc", "--tmpfs", "/tmp",
		"--bind", box, box,
		"--clearenv", "--setenv", "PATH", "/usr/bin:/bin:/usr/sbin:/sbin", "--setenv", "HOME", "/root",
		"--chdir", "/", "--", shimPath)
	outer := b.node("bwrap", argv...)
	outer.Cgroups = cg
	inner := b.node("bwrap-init", argv...)
	inner.NewPidNS = b.env.rootful
	inner.DieWithParent = !bp.m.Spec.Detached
	bp.m.PidNS = inner.NewPidNS
	if !b.env.rootful {
		bp.m.Notes = append(bp.m.Notes, "no root: the inner bwrap shares the host pid namespace")
	}
	shim := b.node("boxlite-shim", shimPath)
	outer.Children = []*node{inner}
	inner.Children = []*node{shim}
	bp.root, bp.main = outer, shim
	if bp.m.Spec.Detached {
		return nil
	}
	sup, err := b.supervisor(bp, "boxlite", func(string) (*node, error) {
		return b.node("boxlite", "boxlite", "serve", "--home", filepath.Dir(filepath.Dir(box))), nil
	})
	if err != nil {
		return err
	}
	bp.parent = sup
	return nil
}

// cubeShim builds a CubeSandbox sandbox: a daemonized
// `containerd-shim-cube-rs -namespace <ns> -id <sid> -address <sock>`
// (Cubelet/services/cubebox/local.go) holding the VMM in-process, in a
// cgroup from a numeric pool, cube_sandbox/sandbox/<n>. Its supervisor is
// the Cubelet listening on -address.
func (b *builder) cubeShim(bp *boxPlan) error {
	sup, err := b.supervisor(bp, "cubelet", func(key string) (*node, error) {
		sock, err := b.socket("run/" + key + ".sock")
		if err != nil {
			return nil, err
		}
		n := b.node("cubelet", "cubelet", "--config", filepath.Join(b.env.base, "cubelet", "config.toml"))
		n.Listen = sock
		return n, nil
	})
	if err != nil {
		return err
	}
	b.cube++
	cg, err := b.dedicatedCgroup(bp, fmt.Sprintf("cube_sandbox/sandbox/%d", b.cube))
	if err != nil {
		return err
	}
	shim := b.node("containerd-shim-cube-rs", "containerd-shim-cube-rs",
		"-namespace", "default", "-id", bp.m.ID, "-address", sup.Listen)
	shim.Cgroups, shim.Setsid = cg, true
	bp.root, bp.main = shim, shim
	return nil
}
