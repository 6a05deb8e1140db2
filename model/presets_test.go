package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc"
)

// IDs in the shapes the runtimes use.
const (
	runID   = "550e8400-e29b-41d4-a716-446655440000"                             // vm0 run ID (a UUID)
	boxKey  = "aB3dE5fG7hJ9"                                                     // boxlite: 12-char base62
	ctrID   = "41cb92475d2d2b8b93befe133d6df302c08482e3f4bd1eae219b46e580b673e9" // containerd / docker / kata: 64 hex
	podUID  = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
	podUIDu = "1c2d3e4f_5a6b_4c7d_8e9f_0a1b2c3d4e5f"
)

type presetCase struct {
	name    string
	p       *proc.Process
	runtime string // "" when no preset may match
	id      string
	by      string
	vars    map[string]string // checked when set (besides "id")
	cleanup []string          // CleanupPaths, checked when set
}

func TestPresets(t *testing.T) {
	if len(ctrID) != 64 {
		t.Fatalf("ctrID has %d characters", len(ctrID))
	}
	cases := []presetCase{
		// vm0: argv and cwd from vm0-ai/vm0 crates/runner/src/process/discovery.rs
		// tests and crates/sandbox-fc/src/sandbox.rs (start_fresh, start_from_snapshot).
		{
			name: "vm0 fresh boot, cwd is the workspace (sandbox.rs start_fresh, discovery.rs parse_workspace_cwd)",
			p: &proc.Process{
				Argv: argvOf("/var/lib/vm0-runner/firecracker/v1.10.1/firecracker --config-file /data/runner-01/workspaces/" + runID + "/config.json --no-api"),
				Cwd:  "/data/runner-01/workspaces/" + runID,
			},
			runtime: "vm0", id: runID, by: ByCwd,
			vars:    map[string]string{"base": "/data/runner-01"},
			cleanup: []string{"/data/runner-01/workspaces/" + runID, "/run/vm0/sock/" + runID},
		},
		{
			name: "vm0 fresh boot, cwd unreadable: base and ID from --config-file",
			p: &proc.Process{
				Argv: argvOf("/var/lib/vm0-runner/firecracker/v1.10.1/firecracker --config-file /data/runner-01/workspaces/" + runID + "/config.json --no-api"),
			},
			runtime: "vm0", id: runID, by: ByArgv,
			vars:    map[string]string{"base": "/data/runner-01"},
			cleanup: []string{"/data/runner-01/workspaces/" + runID, "/run/vm0/sock/" + runID},
		},
		{
			name: "vm0 snapshot restore, cwd unreadable: only the socket dir is known (discovery.rs is_firecracker_bare_name)",
			p: &proc.Process{
				Argv: argvOf("firecracker --api-sock /run/vm0/sock/abc/api.sock"),
			},
			runtime: "vm0", id: "abc", by: ByArgv,
			cleanup: []string{"/run/vm0/sock/abc"},
		},
		{
			name: "vm0 workspace removed under a live VM",
			p: &proc.Process{
				Argv: argvOf("/usr/local/bin/firecracker --api-sock /run/vm0/sock/" + runID + "/api.sock"),
				Cwd:  "/data/r1/workspaces/" + runID + " (deleted)",
			},
			runtime: "vm0", id: runID, by: ByCwd, vars: map[string]string{"base": "/data/r1"},
		},
		{
			name: "vm0 api-sock of a crafted .. id is never cleaned up",
			p: &proc.Process{
				Argv: argvOf("firecracker --api-sock /run/vm0/sock/../api.sock"),
			},
			runtime: "vm0", id: "..", by: ByArgv,
			cleanup: []string{},
		},
		{
			name: "not vm0: a plain firecracker from the getting-started guide",
			p: &proc.Process{
				Argv: argvOf("./firecracker --api-sock /tmp/firecracker.socket --config-file vmconfig.json"),
				Cwd:  "/home/alice/vms",
			},
		},
		{
			name: "not vm0: firecracker-containerd is not a firecracker binary",
			p: &proc.Process{
				Argv: argvOf("/usr/local/bin/firecracker-containerd --config /etc/firecracker-containerd/config.toml"),
				Cwd:  "/srv/workspaces/x",
			},
		},
		{
			name: "not vm0: comm-only lookalike",
			p: &proc.Process{
				Comm: "firecracker",
				Argv: argvOf("/usr/bin/python3 fake.py --api-sock /run/vm0/sock/x/api.sock"),
				Exe:  "/usr/bin/python3.12",
				Cwd:  "/srv/workspaces/x",
			},
		},

		// Firecracker jailer: firecracker-microvm/firecracker docs/jailer.md
		// ("Example Run") and src/jailer/src/env.rs (exec_command).
		{
			name: "jailer as invoked in docs/jailer.md",
			p: &proc.Process{
				Argv: argvOf("/usr/bin/jailer --id 551e7604-e35c-42b3-b825-416853441234 --cgroup cpuset.mems=0 --cgroup cpuset.cpus=0-3 --exec-file /usr/bin/firecracker --uid 123 --gid 100 --netns /var/run/netns/my_netns --daemonize"),
			},
			runtime: "firecracker", id: "551e7604-e35c-42b3-b825-416853441234", by: ByFlag,
		},
		{
			name: "jailed firecracker as env.rs execs it",
			p: &proc.Process{
				Argv: argvOf("/firecracker --id 551e7604-e35c-42b3-b825-416853441234 --start-time-us 1700000000000 --start-time-cpu-us 1200 --parent-cpu-time-us 3100"),
				Cwd:  "/",
			},
			runtime: "firecracker", id: "551e7604-e35c-42b3-b825-416853441234", by: ByFlag,
		},
		{
			name: "jailed firecracker, --id= spelling of docs/jailer.md, versioned exec file",
			p: &proc.Process{
				Argv: argvOf("/firecracker-v1.7.0-x86_64 --id=551e7604-e35c-42b3-b825-416853441234 --start-time-us=1 --start-time-cpu-us=2"),
			},
			runtime: "firecracker", id: "551e7604-e35c-42b3-b825-416853441234", by: ByFlag,
		},
		{
			name: "jailer without --exec-file is some other jailer",
			p:    &proc.Process{Argv: argvOf("/usr/sbin/jailer --id x --profile strict")},
		},

		// boxlite: boxlite-ai/boxlite src/boxlite/src/jailer/{shim_copy.rs,
		// sandbox/bwrap.rs, bwrap.rs, cgroup.rs}.
		{
			name: "boxlite shim copied into the box (shim_copy.rs)",
			p: &proc.Process{
				Argv: argvOf("/home/alice/.boxlite/boxes/" + boxKey + "/bin/boxlite-shim"),
			},
			runtime: "boxlite", id: boxKey, by: ByExe,
		},
		{
			name: "boxlite shim by its exe link after the box dir was removed",
			p: &proc.Process{
				Argv: argvOf("boxlite-shim"),
				Exe:  "/home/alice/.boxlite/boxes/" + boxKey + "/bin/boxlite-shim (deleted)",
			},
			runtime: "boxlite", id: boxKey, by: ByExe,
		},
		{
			name: "boxlite bwrap with the box dir in its binds (sandbox/bwrap.rs apply, BwrapCommand::build)",
			p: &proc.Process{
				Argv: argvOf("bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-uts --die-with-parent --new-session" +
					" --ro-bind /usr /usr --dev /dev --dev-bind /dev/kvm /dev/kvm --proc /proc --tmpfs /tmp" +
					" --bind /home/alice/.boxlite/boxes/" + boxKey + "/tmp /home/alice/.boxlite/boxes/" + boxKey + "/tmp" +
					" --ro-bind /home/alice/.boxlite/boxes/" + boxKey + "/bin /home/alice/.boxlite/boxes/" + boxKey + "/bin" +
					" --clearenv --setenv PATH /usr/bin:/bin:/usr/sbin:/sbin --setenv HOME /root --chdir /" +
					" -- /home/alice/.boxlite/boxes/" + boxKey + "/bin/boxlite-shim"),
				Cgroup: "/user.slice/user-1000.slice/session-2.scope",
			},
			runtime: "boxlite", id: boxKey, by: ByArgv,
		},
		{
			name: "not boxlite: some other bwrap with a boxes/ bind",
			p: &proc.Process{
				Argv: argvOf("bwrap --ro-bind /usr /usr --bind /home/alice/boxes/toys /home/alice/boxes/toys -- /usr/bin/app"),
			},
		},
		{
			name:    "boxlite cgroup as root (cgroup.rs)",
			p:       &proc.Process{Argv: argvOf("/init.krun"), Cgroup: "/boxlite/" + boxKey},
			runtime: "boxlite", id: boxKey, by: ByCgroup,
		},
		{
			name:    "boxlite cgroup rootless (cgroup.rs get_user_cgroup_base)",
			p:       &proc.Process{Argv: argvOf("gvproxy"), Cgroup: "/user.slice/user-1000.slice/user@1000.service/boxlite/" + boxKey},
			runtime: "boxlite", id: boxKey, by: ByCgroup,
		},
		{
			name: "not boxlite: a boxlite.service unit",
			p:    &proc.Process{Argv: argvOf("/usr/bin/boxlite-server"), Cgroup: "/system.slice/boxlite.service"},
		},

		// CubeSandbox: TencentCloud/CubeSandbox CubeShim/shim/src/service/srv.rs
		// (containerd_shim spawn: -namespace -id -address), Cubelet local.go
		// (default shim path).
		{
			name: "cube shim daemon: the ID is -id, never the -namespace value",
			p: &proc.Process{
				Argv: argvOf("/usr/local/services/cubetoolbox/cube-shim/bin/containerd-shim-cube-rs -namespace default -id sb-7f3e91c2 -address /data/cubelet/cubelet.sock"),
			},
			runtime: "cube", id: "sb-7f3e91c2", by: ByFlag,
		},
		{
			name: "cube shim with -id= (go_flag syntax)",
			p: &proc.Process{
				Argv: argvOf("containerd-shim-cube-rs -namespace cube -id=sb-7f3e91c2 -address /data/cubelet/cubelet.sock"),
			},
			runtime: "cube", id: "sb-7f3e91c2", by: ByFlag,
		},
		{
			name: "cube start helper (containerd pkg/shim/util.go Command + binary.go Start)",
			p: &proc.Process{
				Argv: argvOf("containerd-shim-cube-rs -namespace default -address /data/cubelet/cubelet.sock -publish-binary /usr/local/services/cubetoolbox/Cubelet/bin/cubelet -id sb-7f3e91c2 start"),
			},
		},
		{
			name: "cube delete helper (binary.go Delete)",
			p: &proc.Process{
				Argv: argvOf("containerd-shim-cube-rs -namespace default -address /data/cubelet/cubelet.sock -publish-binary /usr/local/services/cubetoolbox/Cubelet/bin/cubelet -id sb-7f3e91c2 -bundle /data/cubelet/state/io.containerd.runtime.v2.task/default/sb-7f3e91c2 delete"),
			},
		},

		// Kata: kata-containers src/runtime/virtcontainers/qemu.go.
		{
			name: "kata shim daemon (manager_linux.go newCommand argv)",
			p: &proc.Process{
				Argv: argvOf("/opt/kata/bin/containerd-shim-kata-v2 -namespace k8s.io -id " + ctrID + " -address /run/containerd/containerd.sock"),
			},
			runtime: "kata", id: ctrID, by: ByFlag,
		},
		{
			name: "kata QEMU with debug threads (qemu.go Name: sandbox-<id>)",
			p: &proc.Process{
				Argv:   argvOf("/opt/kata/bin/qemu-system-x86_64 -name sandbox-" + ctrID + ",debug-threads=on -uuid e62392aa-df4d-4482-b269-622a8d89fc51 -machine q35,accel=kvm,kernel_irqchip=on -pidfile /run/vc/vm/" + ctrID + "/pid"),
				Cgroup: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUIDu + ".slice/kata_" + ctrID,
			},
			runtime: "kata", id: ctrID, by: ByArgv,
		},
		{
			name:    "kata qemu-kvm without debug",
			p:       &proc.Process{Argv: argvOf("/usr/libexec/qemu-kvm -name sandbox-" + ctrID + " -uuid x")},
			runtime: "kata", id: ctrID, by: ByArgv,
		},
		{
			name: "libvirt QEMU is a systemd machine, not kata (machine.c machine_start_scope)",
			p: &proc.Process{
				Argv:   argvOf("/usr/bin/qemu-system-x86_64 -name guest=win10,debug-threads=on -S -machine pc-q35-8.2"),
				Cgroup: `/machine.slice/machine-qemu\x2d1\x2dwin10.scope/libvirt/emulator`,
			},
			runtime: "machine", id: "qemu-1-win10", by: ByCgroup,
		},

		// gVisor: google/gvisor runsc/sandbox/sandbox.go, runsc/container/container.go.
		{
			name: "gvisor shim daemon",
			p: &proc.Process{
				Argv: argvOf("/usr/local/bin/containerd-shim-runsc-v1 -namespace k8s.io -id " + ctrID + " -address /run/containerd/containerd.sock"),
			},
			runtime: "gvisor", id: ctrID, by: ByFlag,
		},
		{
			name: "gvisor sandbox: the ID is the last argument (sandbox.go createSandboxProcess)",
			p: &proc.Process{
				Argv: argvOf("runsc-sandbox --root=/run/containerd/runsc/k8s.io --log=/run/containerd/io.containerd.runtime.v2.task/k8s.io/" + ctrID + "/log.json --log-format=json --platform=systrap" +
					" boot --apply-caps=false --bundle=/run/containerd/io.containerd.runtime.v2.task/k8s.io/" + ctrID + " --controller-fd=3 --mounts-fd=4 --spec-fd=5 --start-sync-fd=6" +
					" --stdio-fds=7 --stdio-fds=8 --stdio-fds=9 --total-host-memory 8589934592 --total-memory 8589934592 " + ctrID),
				Exe:    "/usr/local/bin/runsc",
				Cgroup: "/kubepods.slice/kubepods-pod" + podUIDu + ".slice/cri-containerd-" + ctrID + ".scope",
			},
			runtime: "gvisor", id: ctrID, by: ByArgv,
		},
		{
			name: "gvisor gofer: the ID is the bundle's name (container.go createGoferProcess)",
			p: &proc.Process{
				Argv: argvOf("runsc-gofer --root=/run/containerd/runsc/k8s.io --log-fd=3 gofer --bundle /run/containerd/io.containerd.runtime.v2.task/k8s.io/" + ctrID + " --spec-fd=4 --mounts-fd=5 --io-fds=6"),
			},
			runtime: "gvisor", id: ctrID, by: ByArgv,
		},
		{
			name: "runsc CLI is not a sandbox",
			p:    &proc.Process{Argv: argvOf("runsc --root=/run/containerd/runsc/k8s.io list")},
		},

		// containerd shims: containerd/containerd
		// cmd/containerd-shim-runc-v2/manager/manager_linux.go (newCommand),
		// core/runtime/v2/binary.go and pkg/shim/util.go (helper forms).
		{
			name: "runc shim daemon for docker (namespace moby)",
			p: &proc.Process{
				Argv: argvOf("/usr/bin/containerd-shim-runc-v2 -namespace moby -id " + ctrID + " -address /run/containerd/containerd.sock"),
				Comm: "containerd-shim",
			},
			runtime: "docker", id: ctrID, by: ByFlag,
		},
		{
			name:    "docker shim, --namespace=moby spelling",
			p:       &proc.Process{Argv: argvOf("containerd-shim-runc-v2 --namespace=moby -id " + ctrID + " -address /run/containerd/containerd.sock")},
			runtime: "docker", id: ctrID, by: ByFlag,
		},
		{
			name:    "a namespace that only starts with moby is not docker's",
			p:       &proc.Process{Argv: argvOf("containerd-shim-runc-v2 -namespace mobyx -id " + ctrID + " -address /run/containerd/containerd.sock")},
			runtime: "containerd", id: ctrID, by: ByFlag,
		},
		{
			name:    "shim daemon with -debug",
			p:       &proc.Process{Argv: argvOf("containerd-shim-runc-v2 -namespace k8s.io -id " + ctrID + " -address /run/containerd/containerd.sock -debug")},
			runtime: "containerd", id: ctrID, by: ByFlag,
		},
		{
			name:    "shim daemon with the --id spelling",
			p:       &proc.Process{Argv: argvOf("containerd-shim-wasmtime-v1 --namespace default --id wasm-1 --address /run/containerd/containerd.sock")},
			runtime: "containerd", id: "wasm-1", by: ByFlag,
		},
		{
			name: "shim start helper is not a sandbox",
			p:    &proc.Process{Argv: argvOf("/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -address /run/containerd/containerd.sock -publish-binary /usr/bin/containerd -id " + ctrID + " start")},
		},
		{
			name: "shim delete helper is not a sandbox",
			p:    &proc.Process{Argv: argvOf("/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -address /run/containerd/containerd.sock -publish-binary /usr/bin/containerd -id " + ctrID + " -bundle /run/containerd/io.containerd.runtime.v2.task/k8s.io/" + ctrID + " -debug delete")},
		},
		{
			name: "comm-only shim lookalike",
			p:    &proc.Process{Comm: "containerd-shim", Argv: argvOf("/usr/bin/sleep 1000"), Exe: "/usr/bin/sleep"},
		},
		{
			name: "the v1 shim has no -id",
			p:    &proc.Process{Argv: argvOf("containerd-shim -namespace moby -workdir /var/lib/containerd/io.containerd.runtime.v1.linux/moby/" + ctrID + " -address /run/containerd/containerd.sock")},
		},

		// Kubernetes: kubernetes/kubernetes pkg/kubelet/cm/cgroup_manager_linux.go.
		{
			name: "k8s systemd driver, burstable pod (ToSystemd)",
			p: &proc.Process{
				Argv:   argvOf("nginx: master process nginx"),
				Cgroup: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUIDu + ".slice/cri-containerd-" + ctrID + ".scope",
			},
			runtime: "kubernetes", id: podUID, by: ByCgroup,
		},
		{
			name:    "k8s systemd driver, guaranteed pod, cri-o",
			p:       &proc.Process{Argv: argvOf("/pause"), Cgroup: "/kubepods.slice/kubepods-pod" + podUIDu + ".slice/crio-" + ctrID + ".scope"},
			runtime: "kubernetes", id: podUID, by: ByCgroup,
		},
		{
			name:    "k8s cgroupfs driver (ToCgroupfs)",
			p:       &proc.Process{Argv: argvOf("/pause"), Cgroup: "/kubepods/besteffort/pod" + podUID + "/" + ctrID},
			runtime: "kubernetes", id: podUID, by: ByCgroup,
		},
		{
			name:    "k8s cgroupfs, v1 freezer only",
			p:       &proc.Process{Argv: argvOf("/pause"), Cgroup: "/", Freezer: "/kubepods/pod" + podUID + "/" + ctrID},
			runtime: "kubernetes", id: podUID, by: ByCgroup,
		},
		{
			name:    "dockershim container in a pod belongs to the pod",
			p:       &proc.Process{Argv: argvOf("app"), Cgroup: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + podUIDu + ".slice/docker-" + ctrID + ".scope"},
			runtime: "kubernetes", id: podUID, by: ByCgroup,
		},

		{
			name: "cri-o's conmon in the pod slice belongs to the pod, not to podman",
			p: &proc.Process{
				Argv:   argvOf("/usr/bin/conmon -b /run/containers/storage/overlay-containers/" + ctrID + "/userdata -c " + ctrID + " --exit-dir /var/run/crio/exits -r /usr/bin/runc --socket-dir-path /var/run/crio"),
				Cgroup: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUIDu + ".slice/crio-conmon-" + ctrID + ".scope",
			},
			runtime: "kubernetes", id: podUID, by: ByCgroup,
		},

		// LXC: lxc/lxc src/lxc/cgroups/cgfsng.c, src/lxc/lxccontainer.c.
		{
			name:    "lxc container payload",
			p:       &proc.Process{Argv: argvOf("/sbin/init"), Cgroup: "/lxc.payload.web-1", NSpid: []int{4100, 1}},
			runtime: "lxc", id: "web-1", by: ByCgroup,
		},

		// systemd-nspawn@.service: systemd/systemd units/systemd-nspawn@.service.in.
		{
			name:    "nspawn payload started by machinectl start",
			p:       &proc.Process{Argv: argvOf("/bin/sleep 100000"), Cgroup: "/machine.slice/systemd-nspawn@web\\x2d1.service/payload"},
			runtime: "nspawn", id: "web-1", by: ByCgroup,
		},

		// Docker: moby/moby daemon/oci_linux.go (WithCgroups).
		{
			name:    "docker systemd driver",
			p:       &proc.Process{Argv: argvOf("postgres"), Cgroup: "/system.slice/docker-" + ctrID + ".scope"},
			runtime: "docker", id: ctrID, by: ByCgroup,
		},
		{
			name:    "docker cgroupfs driver",
			p:       &proc.Process{Argv: argvOf("postgres"), Cgroup: "/docker/" + ctrID},
			runtime: "docker", id: ctrID, by: ByCgroup,
		},
		{
			name:    "rootless docker",
			p:       &proc.Process{Argv: argvOf("sh"), Cgroup: "/user.slice/user-1000.slice/user@1000.service/user.slice/docker-" + ctrID + ".scope/init.scope"},
			runtime: "docker", id: ctrID, by: ByCgroup,
		},
		{
			name: "dockerd itself is not a container",
			p:    &proc.Process{Argv: argvOf("/usr/bin/dockerd -H fd://"), Cgroup: "/system.slice/docker.service"},
		},

		// systemd machines: systemd/systemd src/machine/machine.c.
		{
			name:    "nspawn machine, escaped name",
			p:       &proc.Process{Argv: argvOf("/usr/lib/systemd/systemd"), Cgroup: `/machine.slice/machine-fedora\x2d38.scope/payload`},
			runtime: "machine", id: "fedora-38", by: ByCgroup,
		},
	}
	rs := Presets()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := rs.Match(tc.p)
			if tc.runtime == "" {
				if ok {
					t.Fatalf("preset %q (%s) claimed it as %q", m.Rule.Name, m.Rule.Doc, m.ID)
				}
				return
			}
			if !ok {
				t.Fatalf("no preset matched, want %q", tc.runtime)
			}
			if m.Rule.Name != tc.runtime || m.ID != tc.id || m.By != tc.by {
				t.Errorf("got %s %q by %s, want %s %q by %s", m.Rule.Name, m.ID, m.By, tc.runtime, tc.id, tc.by)
			}
			for k, v := range tc.vars {
				if m.Vars[k] != v {
					t.Errorf("Vars[%q] = %q, want %q (vars %v)", k, m.Vars[k], v, m.Vars)
				}
			}
			if tc.cleanup != nil {
				got, _ := m.CleanupPaths()
				if !slices.Equal(got, tc.cleanup) {
					t.Errorf("cleanup %q, want %q", got, tc.cleanup)
				}
			}
		})
	}
}

// PID 1 of this machine is its own agent, and its argv mentions
// firecracker: no preset may ever take it for a sandbox.
func TestPresetsNeverMatchPID1(t *testing.T) {
	pid1 := &proc.Process{
		PID:     1,
		Comm:    "process_api",
		Argv:    argvOf("/process_api --firecracker-init --addr 0.0.0.0:2024 --max-ws-buffer-size 32768 --block-local-connections --log-vsock-port 5002 --control-vsock-port 5001 --listen-vsock-port 2024 --tcp-readiness-only --auth-required"),
		Exe:     "/process_api",
		Cwd:     "/",
		Cgroup:  "/",
		Freezer: "/",
	}
	for _, r := range Presets() {
		if m, ok := r.Match(pid1); ok {
			t.Errorf("preset %q (%s) matched PID 1 as %q", r.Name, r.Doc, m.ID)
		}
	}
}

func TestPresetsAreValidAndCited(t *testing.T) {
	for i, r := range Presets() {
		if err := r.Validate(); err != nil {
			t.Errorf("preset %d: %v", i, err)
		}
		if r.Source != "preset" {
			t.Errorf("preset %d %q: Source %q", i, r.Name, r.Source)
		}
		// Every Doc names a repository (owner/name) and a file in it.
		if !strings.Contains(r.Doc, ": ") || !strings.Contains(r.Doc[strings.LastIndex(r.Doc, ": "):], "/") {
			t.Errorf("preset %d %q: Doc %q cites no repository and path", i, r.Name, r.Doc)
		}
	}
}

func TestPresetsOrder(t *testing.T) {
	// The first rule that matches claims a process, so a specific rule must
	// come before any broader one that would also match.
	first := map[string]int{}
	for i, r := range Presets() {
		if _, ok := first[r.Name]; !ok {
			first[r.Name] = i
		}
	}
	for _, pair := range [][2]string{
		{"vm0", "firecracker"},       // vm0's VMs are not claimed as generic Firecrackers
		{"cube", "containerd"},       // a runtime's own shim before the generic shim
		{"kata", "containerd"},       //
		{"gvisor", "containerd"},     //
		{"kata", "kubernetes"},       // a process's own argv before the cgroup it lives in
		{"gvisor", "kubernetes"},     //
		{"containerd", "kubernetes"}, //
		{"boxlite", "kubernetes"},    //
		{"docker", "containerd"},     // a Docker container's shim is docker's, not generic
		{"docker", "machine"},        //
	} {
		a, okA := first[pair[0]]
		b, okB := first[pair[1]]
		if !okA || !okB || a >= b {
			t.Errorf("preset %q (at %d) must come before %q (at %d)", pair[0], a, pair[1], b)
		}
	}
}

func TestPresetsRoundTrip(t *testing.T) {
	presets := Presets()
	var b strings.Builder
	if err := presets.WriteTOML(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if n := strings.Count(text, "# source: preset\n"); n != len(presets) {
		t.Errorf("%d source comments for %d presets", n, len(presets))
	}
	back, err := ParseRules([]byte(text), "presets.toml")
	if err != nil {
		t.Fatalf("ParseRules of WriteTOML output: %v\n%s", err, text)
	}
	if len(back) != len(presets) {
		t.Fatalf("%d rules back, want %d", len(back), len(presets))
	}
	lines := strings.Split(text, "\n")
	for i, want := range presets {
		got := back[i]
		if d := ruleDiff(got, want); d != "" {
			t.Errorf("rule %d %q changed in the round trip: %s", i, want.Name, d)
		}
		// Source is the [[rule]] header, right after the rule's doc comment.
		n, err := strconv.Atoi(strings.TrimPrefix(got.Source, "presets.toml:"))
		if err != nil || n < 2 || lines[n-1] != "[[rule]]" || lines[n-2] != "# "+want.Doc {
			t.Errorf("rule %d Source %q does not point at its [[rule]] header", i, got.Source)
		}
	}
}

func TestPresetsAreFreshCopies(t *testing.T) {
	a := Presets()
	a[0].Name = "changed"
	a[0].Cleanup[0] = "/changed"
	b := Presets()
	if b[0].Name == "changed" || b[0].Cleanup[0] == "/changed" {
		t.Error("changing one Presets() result changed the next")
	}
}

func TestPresetSupervisors(t *testing.T) {
	byName := map[string]*Rule{}
	for _, r := range Presets() {
		if _, ok := byName[r.Name]; !ok {
			byName[r.Name] = r
		}
	}
	// vm0's runner, as discovery.rs parse_runner_cmdline recognises it.
	runner := byName["vm0"].Supervisor.Ancestor
	for cmdline, want := range map[string]bool{
		"/var/lib/vm0-runner/bin/runner start --config /data/runner-01/config.yaml": true,
		"/usr/local/bin/runner benchmark --config /etc/runner/bench.yaml":           true,
		"runner start -c /data/runner.yaml":                                         true,
		"runner --config /data/runner.yaml start":                                   true,
		"runner start":                      false,
		"runner --config /data/config.yaml": false,
		"sudo ip netns exec vm0-ns-3 sudo -u vm0 /usr/local/bin/firecracker --config-file /data/r/workspaces/x/config.json --no-api": false,
		"ip netns exec vm0-ns-3 sudo -u vm0 firecracker --api-sock /run/vm0/sock/x/api.sock":                                         false,
	} {
		if got := runner.MatchString(cmdline); got != want {
			t.Errorf("vm0 runner ancestor on %q = %v, want %v", cmdline, got, want)
		}
	}
	// containerd-style shims name their supervisor's socket with -address.
	for _, name := range []string{"cube", "kata", "docker", "containerd"} {
		if f := byName[name].Supervisor.SocketFlag; f != "-address" {
			t.Errorf("%s supervisor socket flag %q", name, f)
		}
	}
	sock, ok := FlagValue(argvOf("containerd-shim-cube-rs -namespace default -id sb-1 -address /data/cubelet/cubelet.sock"), byName["cube"].Supervisor.SocketFlag)
	if !ok || sock != "/data/cubelet/cubelet.sock" {
		t.Errorf("cube supervisor socket %q, %v", sock, ok)
	}
	// Boxes, jailed Firecrackers and containers are owned by no process
	// sandtop could test for: detached boxes and daemonized jailers have
	// PPID 1 by design.
	for _, name := range []string{"boxlite", "firecracker", "kubernetes", "machine"} {
		if !byName[name].Supervisor.IsZero() {
			t.Errorf("%s names a supervisor", name)
		}
	}
	// A Docker container found by its cgroup alone (its shim is matched by
	// the shim rule, which does name containerd's socket) has none either.
	for _, r := range Presets() {
		if r.Name == "docker" && r.Cgroup != nil && !r.Supervisor.IsZero() {
			t.Errorf("docker cgroup rule names a supervisor")
		}
	}
}

func TestRequiredLiterals(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`(?:^|/)firecracker$`, []string{"firecracker"}},
		{`/boxes/(?P<id>[A-Za-z0-9_-]{1,128})/bin/boxlite-shim$`, []string{"/bin/boxlite-shim"}},
		{`(?:^|/)docker-(?P<id>[0-9a-f]{64})\.scope|(?:^|/)docker/(?P<id>[0-9a-f]{64})`, []string{"docker-", "docker/"}},
		{`(?i)firecracker`, nil},
		{`a|b*`, nil},
		{`(?P<id>.+)`, nil},
		{`(ab)+c`, []string{"ab"}},
		// Runs of known strings are multiplied out, so that an optional
		// dash or a choice of separators still leaves a long literal.
		{`(?:^| )--?namespace[= ]moby(?: |$)`, []string{"-namespace moby", "-namespace=moby"}},
		{`(?:^| )(?:-M|--machine)[ =](?P<id>[^ ]+)`, []string{"-M ", "-M=", "--machine ", "--machine="}},
		{`(?:^|/)kubepods(?:-[a-z]+)?-pod|(?:^|/)kubepods/`, []string{"kubepods"}},
		{`^(?:a|b)?(?:c|d)?$`, nil},
		{`x(?:a|b|c|d)(?:a|b|c|d)(?:a|b|c|d)y`, []string{"ay", "by", "cy", "dy"}}, // too many to multiply out
	}
	for _, tt := range tests {
		if got := requiredLiterals(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("requiredLiterals(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
	// A counted repeat costs one node, whatever its count.
	long := `/boxes/(?P<id>[A-Za-z0-9_-]{1,1000})/bin/shim$`
	if allocs := testing.AllocsPerRun(10, func() { requiredLiterals(long) }); allocs > 100 {
		t.Errorf("requiredLiterals(%q) allocates %.0f times, want at most 100", long, allocs)
	}
	// The literals only ever rule out inputs the regex would reject too.
	re := mustRegexp(t, `(?:^|/)kubepods(?:-[a-z]+)?-pod(?P<id>[0-9a-f_]+)\.slice`)
	for in, want := range map[string]bool{
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_ab.slice": true,
		"kubepods-pod1.slice":       true,
		"/system.slice/ssh.service": false,
	} {
		if got := mayMatch(re, in); got != want || re.MatchString(in) != want {
			t.Errorf("prefilter on %q = %v, regex %v; want both %v", in, got, re.MatchString(in), want)
		}
	}
}

// ruleDiff names the fields in which two rules differ, Source and Doc aside.
func ruleDiff(a, b *Rule) string {
	var d []string
	cmp := func(name, x, y string) {
		if x != y {
			d = append(d, fmt.Sprintf("%s: %q != %q", name, x, y))
		}
	}
	cmp("name", a.Name, b.Name)
	cmp("exe", reString(a.Exe), reString(b.Exe))
	cmp("comm", reString(a.Comm), reString(b.Comm))
	cmp("argv", reString(a.Argv), reString(b.Argv))
	cmp("exclude_argv", reString(a.ExcludeArgv), reString(b.ExcludeArgv))
	cmp("flag", a.Flag, b.Flag)
	cmp("cgroup", reString(a.Cgroup), reString(b.Cgroup))
	cmp("cwd", reString(a.Cwd), reString(b.Cwd))
	cmp("id_transform", string(a.IDTransform), string(b.IDTransform))
	cmp("process_group", fmt.Sprint(a.ProcessGroup), fmt.Sprint(b.ProcessGroup))
	cmp("guest", fmt.Sprint(a.Guest), fmt.Sprint(b.Guest))
	cmp("exits_after_workload", fmt.Sprint(a.ExitsAfterWorkload), fmt.Sprint(b.ExitsAfterWorkload))
	cmp("halt_signal", fmt.Sprint(int(a.HaltSignal)), fmt.Sprint(int(b.HaltSignal)))
	cmp("supervisor.ancestor", reString(a.Supervisor.Ancestor), reString(b.Supervisor.Ancestor))
	cmp("supervisor.socket_flag", a.Supervisor.SocketFlag, b.Supervisor.SocketFlag)
	cmp("cleanup", strings.Join(a.Cleanup, " "), strings.Join(b.Cleanup, " "))
	return strings.Join(d, "; ")
}
