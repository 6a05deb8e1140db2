package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// vm0 builds a vm0 run: the runner spawns
// `sudo ip netns exec <ns> sudo -u <user> firecracker --api-sock …` as one
// process group (process_group(0), crates/sandbox-fc/src/firecracker_process.rs),
// and firecracker's cwd is <base>/workspaces/<id>, which is where vm0
// reads the run ID from (parse_workspace_cwd, crates/runner/src/process/discovery.rs).
func (b *builder) vm0(bp *boxPlan) error {
	base, err := b.mkdir(nil, "vm0")
	if err != nil {
		return err
	}
	config := filepath.Join(base, "runner.yaml")
	sup, err := b.supervisor(bp, "vm0-runner", func(string) (*node, error) {
		if err := os.WriteFile(config, []byte("base_dir: "+base+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", config, err)
		}
		n := b.node("runner", "runner", "start", "--config", config)
		n.Dir = base
		return n, nil
	})
	if err != nil {
		return err
	}
	ws, err := b.mkdir(bp, "vm0/workspaces/"+bp.m.ID)
	if err != nil {
		return err
	}
	fc := b.node("firecracker", "firecracker", "--api-sock", "/run/vm0/sock/"+bp.m.ID+"/api.sock")
	fc.Dir = ws
	sudoU := b.node("sudo-u", append([]string{"sudo", "-u", "vm0"}, fc.Argv...)...)
	b.netns++
	ns := fmt.Sprintf("vm0-ns-%d", b.netns)
	ip := b.node("ip-netns", append([]string{"ip", "netns", "exec", ns}, sudoU.Argv...)...)
	sudo := b.node("sudo", append([]string{"sudo"}, ip.Argv...)...)
	// The first sudo leads the chain's own process group; the rest inherit it.
	sudo.Setpgid = true
	sudo.Children = []*node{ip}
	ip.Children = []*node{sudoU}
	sudoU.Children = []*node{fc}
	bp.root, bp.main, bp.parent = sudo, fc, sup
	bp.m.Notes = append(bp.m.Notes, "the api socket under /run/vm0/sock is named in argv only; it is not created")
	return nil
}

// jailer builds a Firecracker VM started through the jailer, which sets up
// the chroot and cgroup (<parent-cgroup, default "firecracker">/<id>) and then
// execs firecracker in place with --id and the start-time flags
// (exec_command in src/jailer/src/env.rs). The caller that ran the jailer is
// the supervisor; here that is the owner.
func (b *builder) jailer(bp *boxPlan) error {
	id := bp.m.ID
	chroot, err := b.mkdir(bp, "jailer/firecracker/"+id+"/root")
	if err != nil {
		return err
	}
	cg, err := b.dedicatedCgroup(bp, "firecracker/"+id)
	if err != nil {
		return err
	}
	var now unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	us := strconv.FormatInt(now.Nano()/1000, 10)
	fc := b.node("firecracker", "/firecracker", "--id", id,
		"--start-time-us", us, "--start-time-cpu-us", "1200", "--parent-cpu-time-us", "900")
	j := b.node("jailer", "jailer", "--id", id, "--exec-file", "/usr/bin/firecracker",
		"--uid", "123", "--gid", "100", "--chroot-base-dir", filepath.Dir(filepath.Dir(filepath.Dir(chroot))))
	j.Dir, j.Cgroups, j.Exec = chroot, cg, fc
	// Setsid stands for --daemonize: the VM is nobody's child but init's.
	j.Setsid = true
	bp.root, bp.main = j, fc
	bp.m.Notes = append(bp.m.Notes, "the jailer exec'd firecracker in place (same pid); no chroot is entered")
	return nil
}

// machine builds a libvirt QEMU guest: libvirtd daemonizes qemu into
// machine.slice/machine-qemu\x2d<n>\x2d<name>.scope (src/machine/machine.c
// escapes the machine name with unit-name escaping).
func (b *builder) machine(bp *boxPlan) error {
	name := bp.m.ID
	cg, err := b.dedicatedCgroup(bp, "machine.slice/machine-"+systemdEscape(name)+".scope")
	if err != nil {
		return err
	}
	guest := name
	if parts := strings.SplitN(name, "-", 3); len(parts) == 3 {
		guest = parts[2]
	}
	q := b.node("qemu", "/usr/bin/qemu-system-x86_64", "-name", "guest="+guest+",debug-threads=on",
		"-S", "-machine", "pc-q35-8.2,usb=off,dump-guest-core=off", "-accel", "kvm",
		"-m", "2048", "-smp", "2,sockets=2,cores=1,threads=1", "-uuid", b.ids.uuid(),
		"-no-user-config", "-nodefaults", "-daemonize")
	q.Cgroups, q.Setsid = cg, true
	bp.root, bp.main = q, q
	return nil
}
