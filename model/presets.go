package model

import (
	"regexp"
	"slices"
	"sync"
	"syscall"
)

// Presets returns the built-in rules, most specific first: rules on a
// process's own argv or exe come before rules on the cgroup it lives in, and
// a runtime's own shim rule before the generic containerd shim rule. Each
// call returns fresh copies, so a caller may change them; the compiled
// regexes are shared, which is safe because a *regexp.Regexp is immutable.
// Each rule's Doc cites the source (repository and path) its shape is
// taken from.
func Presets() Rules {
	src := presets()
	out := make(Rules, len(src))
	for i, r := range src {
		c := *r
		c.Cleanup = slices.Clone(r.Cleanup)
		c.Leftovers = slices.Clone(r.Leftovers)
		c.Reconcile = slices.Clone(r.Reconcile)
		c.Inspect = slices.Clone(r.Inspect)
		out[i] = &c
	}
	return out
}

// Regex pieces shared by several presets.
const (
	// vm0Runner is vm0's parse_runner_cmdline as one regex: an argv token
	// "start" or "benchmark" and a token "--config" or "-c" followed by a
	// value, in either order.
	vm0Runner = `(?:^| )(?:start|benchmark) (?:.* )?(?:--config|-c) [^ ]|(?:^| )(?:--config|-c) [^ ]+ (?:.* )?(?:start|benchmark)(?: |$)`
	// shimHelper is the short-lived form containerd runs a shim binary in:
	// "... -id ID start" to launch the daemon and "... -id ID -bundle B
	// delete" to clean up after a dead one. Go's flag package stops at the
	// first positional argument, so the action is always the last token.
	shimHelper = `(?:^| )(?:start|delete)$`
	// shimAncestor is any containerd shim (or runsc itself, for a runsc
	// sandbox run without containerd).
	shimAncestor = `(?:^|/)(?:containerd-shim-[a-z0-9]+-v[0-9]+|runsc) `
	boxID        = `[A-Za-z0-9_-]{1,128}`
	// ctrdIdent is a containerd namespace or container ID
	// (containerd/containerd pkg/identifiers/validate.go: alphanumerics
	// joined by single '.', '_' or '-').
	ctrdIdent = `[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*`
	// dotlessIdent is ctrdIdent without dots: where a unit's name
	// (foo.service) could stand, an ID must not look like one.
	dotlessIdent = `[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*`
	// kubePod is a Kubernetes pod's cgroup, systemd driver
	// (kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid with _>.slice)
	// or cgroupfs (/kubepods/<qos>/pod<uid>); the ID is the pod UID.
	kubePod = `(?:^|/)kubepods(?:-[a-z]+)?-pod(?P<id>[0-9A-Fa-f_]+)\.slice(?:/|$)|(?:^|/)kubepods/(?:[a-z]+/)?pod(?P<id>[0-9A-Fa-f-]+)(?:/|$)`
	// vm0Sockets are the sockets vm0 makes in a VM's socket directory
	// (api.sock, control.sock, vsock/vsock.sock); each is a leftover of its
	// own, so that one something still listens on keeps its directory.
	// vm0's network namespaces and veths are pooled (vm0-ns-<pool>-<idx>,
	// vm0-ve-<pool>-<idx>: crates/sandbox-fc/src/network/pool/naming.rs)
	// and named after no VM, so no template can say whose one is.
	vm0Docs = "vm0-ai/vm0 crates/runner/src/process/discovery.rs (is_firecracker_cmdline, parse_workspace_cwd, parse_runner_cmdline), crates/sandbox-fc/src/sandbox.rs (sudo ip netns exec … firecracker, process_group(0), cwd = workspace), crates/sandbox-fc/src/paths.rs (/run/vm0/sock/<id>/{api.sock,control.sock,vsock/vsock.sock}), crates/runner/src/cmd/kill/orphan.rs (orphan cleanup)"
)

var (
	vm0Sockets = []string{"socket:/run/vm0/sock/{id}/api.sock", "socket:/run/vm0/sock/{id}/control.sock", "socket:/run/vm0/sock/{id}/vsock/vsock.sock"}
	// jailerLeftovers are what the jailer leaves for its user to remove
	// (docs/jailer.md: "the jailer does not clean up"): the chroot
	// /srv/jailer/<exec-file name>/<id> (default --chroot-base-dir, an exec
	// file named firecracker) and the cgroup <parent-cgroup>/<id> in every
	// controller's hierarchy (v1) or the unified one, --parent-cgroup
	// defaulting to the exec file's name: src/jailer/src/env.rs,
	// src/jailer/src/cgroup.rs. Its --netns is the caller's, named by no ID.
	jailerLeftovers = []string{"/srv/jailer/firecracker/{id}", "cgroup:/firecracker/{id}"}
	// kataLeftovers are Kata's per-sandbox run directories: the VM's
	// (/run/vc/vm/<id>, sockets and the QEMU pid file), the sandbox's state
	// (/run/vc/sbs/<id>) and the share the guest mounts, with a bind mount
	// per container below it (/run/kata-containers/shared/sandboxes/<id>):
	// kata-containers/kata-containers src/runtime/virtcontainers/persist/fs/fs.go
	// (RunStoragePath, RunVMStoragePath), src/runtime/virtcontainers/kata_agent.go
	// (defaultKataHostSharedDir). Its netns (the CRI's cni-<uuid>) and tap
	// (tap0_kata) are named after no sandbox.
	kataLeftovers = []string{"/run/vc/vm/{id}", "/run/vc/sbs/{id}", "/run/kata-containers/shared/sandboxes/{id}"}
)

var presets = sync.OnceValue(func() Rules {
	re := regexp.MustCompile
	vm0Supervisor := Supervisor{Ancestor: re(vm0Runner)}
	containerd := Supervisor{SocketFlag: "-address"}
	rules := Rules{
		{
			Name:         "vm0",
			Exe:          re(`(?:^|/)firecracker$`),
			Cwd:          re(`^(?P<base>/.*)/workspaces/(?P<id>[^/]+)$`),
			ProcessGroup: true,
			Supervisor:   vm0Supervisor,
			Cleanup:      []string{"{base}/workspaces/{id}", "/run/vm0/sock/{id}"},
			Leftovers:    vm0Sockets,
			Guest:        true,
			Doc:          "vm0 runner's Firecracker, by the {base}/workspaces/{id} cwd the runner spawns it in: " + vm0Docs,
		},
		{
			Name:         "vm0",
			Exe:          re(`(?:^|/)firecracker$`),
			Argv:         re(`(?:^| )--config-file (?P<base>/[^ ]*)/workspaces/(?P<id>[^/ ]+)/config\.json(?: |$)`),
			ProcessGroup: true,
			Supervisor:   vm0Supervisor,
			Cleanup:      []string{"{base}/workspaces/{id}", "/run/vm0/sock/{id}"},
			Leftovers:    vm0Sockets,
			Guest:        true,
			Doc:          "vm0 runner's Firecracker, fresh boot (firecracker --config-file {base}/workspaces/{id}/config.json --no-api), for when the cwd is unreadable: " + vm0Docs,
		},
		{
			Name:         "vm0",
			Exe:          re(`(?:^|/)firecracker$`),
			Argv:         re(`(?:^| )--api-sock /run/vm0/sock/(?P<id>[^/ ]+)/`),
			ProcessGroup: true,
			Supervisor:   vm0Supervisor,
			// The socket path does not say where the workspace is, so only
			// the socket directory can be cleaned up.
			Cleanup:   []string{"/run/vm0/sock/{id}"},
			Leftovers: vm0Sockets,
			Guest:     true,
			Doc:       "vm0 runner's Firecracker, snapshot restore (firecracker --api-sock /run/vm0/sock/{id}/api.sock), for when the cwd is unreadable: " + vm0Docs,
		},
		{
			Name:      "firecracker",
			Exe:       re(`(?:^|/)jailer$`),
			Argv:      re(`(?:^| )--exec-file[ =]`),
			Flag:      "--id",
			Leftovers: jailerLeftovers,
			Doc:       "Firecracker jailer (jailer --id <id> --exec-file … --uid … --gid …; the chroot is <chroot-base>/<exec-file name>/<id>): firecracker-microvm/firecracker docs/jailer.md, src/jailer/src/env.rs",
		},
		{
			Name:      "firecracker",
			Exe:       re(`(?:^|/)firecracker[^/]*$`),
			Flag:      "--id",
			Leftovers: jailerLeftovers,
			Guest:     true,
			Doc:       "Firecracker with an --id, as the jailer execs it (/firecracker --id <id> --start-time-us … in its chroot; the exec file's name must contain \"firecracker\"): firecracker-microvm/firecracker src/jailer/src/env.rs (exec_command), docs/jailer.md",
		},
		{
			Name:  "boxlite",
			Exe:   re(`/boxes/(?P<id>` + boxID + `)/bin/boxlite-shim$`),
			Guest: true,
			Doc:   "boxlite shim, copied into each box as ~/.boxlite/boxes/<id>/bin/boxlite-shim: boxlite-ai/boxlite src/boxlite/src/jailer/shim_copy.rs; IDs per src/boxlite/src/runtime/id.rs",
		},
		{
			Name: "boxlite",
			Exe:  re(`(?:^|/)bwrap$`),
			Argv: re(`(?:^| )--(?:ro-)?bind [^ ]*/boxes/(?P<id>` + boxID + `)(?:/[^ ]*)? .* -- [^ ]*boxlite-shim(?: |$)`),
			Doc:  "boxlite's outer and inner (pid-namespace) bwrap, whose binds carry the box directory (bwrap … --ro-bind ~/.boxlite/boxes/<id>/bin … -- …/boxlite-shim): boxlite-ai/boxlite src/boxlite/src/jailer/sandbox/bwrap.rs, src/boxlite/src/jailer/bwrap.rs, src/boxlite/src/jailer/mod.rs (build_path_access)",
		},
		{
			Name:   "boxlite",
			Cgroup: re(`(?:^|/)boxlite/(?P<id>` + boxID + `)(?:/|$)`),
			Doc:    "boxlite box cgroup, /boxlite/<id> as root or user.slice/user-<uid>.slice/user@<uid>.service/boxlite/<id> rootless: boxlite-ai/boxlite src/boxlite/src/jailer/cgroup.rs",
		},
		{
			Name:          "cube",
			Exe:           re(`(?:^|/)containerd-shim-cube-rs$`),
			Flag:          "-id",
			NamespaceFlag: "-namespace",
			ExcludeArgv:   re(shimHelper),
			Supervisor:    containerd,
			OwnCgroup:     re(`(?:^|/)cube_sandbox(?:_v2)?/sandbox/(?:numa[0-9]+/)?[0-9]+$`),
			Guest:         true,
			Doc:           "CubeSandbox shim with the hypervisor in-process (containerd-shim-cube-rs -namespace <ns> -id <sandbox> -address <cubelet socket>): TencentCloud/CubeSandbox CubeShim/shim/src/service/srv.rs (containerd_shim spawn), Cubelet/services/cubebox/local.go; each sandbox gets a slot of Cubelet's reusable cgroup pool, cube_sandbox/sandbox/<n> (v1) or cube_sandbox_v2/sandbox/numa<N>/<n> (v2), one sandbox at a time: Cubelet/plugins/cube/internals/cgroup/handle/interface.go (DefaultPathPoolV1, DefaultPathPoolV2)",
		},
		{
			Name:          "kata",
			Exe:           re(`(?:^|/)containerd-shim-kata-v2$`),
			Flag:          "-id",
			NamespaceFlag: "-namespace",
			ExcludeArgv:   re(shimHelper),
			Supervisor:    containerd,
			Leftovers:     kataLeftovers,
			Doc:           "Kata Containers shim, one per pod sandbox (containerd-shim-kata-v2 -namespace <ns> -id <sandbox> -address <containerd socket>): kata-containers/kata-containers src/runtime/cmd/containerd-shim-kata-v2/main.go, containerd/containerd cmd/containerd-shim-runc-v2/manager/manager_linux.go (daemon argv)",
		},
		{
			Name:       "kata",
			Exe:        re(`(?:^|/)qemu(?:-system-[a-z0-9_]+|-kvm)?$`),
			Argv:       re(`(?:^| )-name sandbox-(?P<id>[^ ,]+)(?:[, ]|$)`),
			Supervisor: Supervisor{Ancestor: re(`(?:^|/)containerd-shim-kata-v2 `)},
			Leftovers:  kataLeftovers,
			Guest:      true,
			Doc:        "Kata Containers QEMU (qemu-system-* -name sandbox-<id>[,debug-threads=on] … -pidfile /run/vc/vm/<id>/pid): kata-containers/kata-containers src/runtime/virtcontainers/qemu.go (govmmQemu.Config Name, PidFile)",
		},
		{
			Name:          "gvisor",
			Exe:           re(`(?:^|/)containerd-shim-runsc-v1$`),
			Flag:          "-id",
			NamespaceFlag: "-namespace",
			ExcludeArgv:   re(shimHelper),
			Supervisor:    containerd,
			Doc:           "gVisor's containerd shim (containerd-shim-runsc-v1 -namespace <ns> -id <id> -address <containerd socket>): google/gvisor shim/main.go, containerd/containerd core/runtime/v2/binary.go",
		},
		{
			Name:       "gvisor",
			Exe:        re(`(?:^|/)runsc-sandbox$`),
			Argv:       re(`(?:^| )boot (?:.* )?(?P<id>[^ -][^ ]*)$`),
			Supervisor: Supervisor{Ancestor: re(shimAncestor)},
			Guest:      true,
			Doc:        "gVisor sandbox (Sentry): argv[0] set to runsc-sandbox, `boot` subcommand, container ID as the last argument: google/gvisor runsc/sandbox/sandbox.go (createSandboxProcess)",
		},
		{
			Name:       "gvisor",
			Exe:        re(`(?:^|/)runsc-gofer$`),
			Argv:       re(`(?:^| )gofer (?:.* )?--bundle[ =](?:[^ ]*/)?(?P<id>[^/ ]+)/?(?: |$)`),
			Supervisor: Supervisor{Ancestor: re(shimAncestor)},
			Doc:        "gVisor gofer: argv[0] set to runsc-gofer, `gofer --bundle <bundle>`; containerd names the bundle directory after the container ID: google/gvisor runsc/container/container.go (createGoferProcess)",
		},
		{
			Name:          "docker",
			Exe:           re(`(?:^|/)containerd-shim-[a-z0-9]+-v[0-9]+$`),
			Argv:          re(`(?:^| )--?namespace[= ]moby(?: |$)`),
			Flag:          "-id",
			NamespaceFlag: "-namespace",
			ExcludeArgv:   re(shimHelper),
			Supervisor:    containerd,
			Doc:           "containerd shim of a Docker container: dockerd runs its containers in the containerd namespace \"moby\", and the shim's -id is the 64-hex container ID that also names its docker-<id>.scope cgroup: moby/moby libcontainerd/supervisor (namespace moby), containerd/containerd cmd/containerd-shim-runc-v2/manager/manager_linux.go (newCommand)",
		},
		{
			Name:          "containerd",
			Exe:           re(`(?:^|/)containerd-shim-[a-z0-9]+-v[0-9]+$`),
			Flag:          "-id",
			NamespaceFlag: "-namespace",
			ExcludeArgv:   re(shimHelper),
			Supervisor:    containerd,
			Doc:           "containerd shim v2 daemon (containerd-shim-<runtime>-v<N> -namespace <ns> -id <id> -address <socket>), not its start/delete helper runs: containerd/containerd cmd/containerd-shim-runc-v2/manager/manager_linux.go (newCommand), core/runtime/v2/binary.go, pkg/shim/util.go (Command)",
		},
		{
			Name:        "kubernetes",
			Exe:         re(`(?:^|/)conmon$`),
			Cgroup:      re(kubePod),
			IDTransform: UnderscoreToDash,
			Doc:         "cri-o's conmon, one per container, in the pod's slice as crio-conmon-<id>.scope next to the container's crio-<id>.scope (conmon_cgroup = \"pod\", the default with the systemd cgroup manager): part of the pod, not a podman container: cri-o/cri-o internal/config/cgmgr/systemd.go (crio-conmon- and crio- scope prefixes), internal/oci/runtime_oci.go (CreateContainer runs conmon)",
		},
		{
			Name: "podman",
			Exe:  re(`(?:^|/)conmon$`),
			Flag: "-c",
			// Optional captures: the container name, an alias; the storage
			// paths podman passes conmon for its exit command, which the
			// reconcile command needs to find the container.
			Argv: re(`^(?:.*? (?:-n|--name)[ =](?P<alias>[^ ]+))?(?:.*? --exit-command-arg --root --exit-command-arg (?P<root>/[^ ]*) --exit-command-arg --runroot --exit-command-arg (?P<runroot>/[^ ]*))?(?:.*? --exit-command-arg --tmpdir --exit-command-arg (?P<tmpdir>/[^ ]*))?`),
			// conmon writes the exit file podman reads and runs podman's
			// cleanup once its container is gone: killed before that,
			// podman keeps a paused container paused and refuses rm --force.
			ExitsAfterWorkload: true,
			Reconcile:          []string{"podman", "--root", "{root}", "--runroot", "{runroot}", "--tmpdir", "{tmpdir}", "rm", "--force", "{id}"},
			Inspect:            []string{"podman", "--root", "{root}", "--runroot", "{runroot}", "--tmpdir", "{tmpdir}", "container", "inspect", "{id}"},
			Doc:                "podman's conmon, the container's monitor (no daemon: conmon --api-version 1 -c <64hex> -u <64hex> -r <runtime> -b <bundle> -p <pidfile> -n <name> … --exit-command /usr/bin/podman --exit-command-arg --root --exit-command-arg <root> … container cleanup <id>); the name is an alias; podman notices a kill behind its back only when told (podman rm --force, which the first time waits 5 s for conmon's exit file and marks the container exited, the second time removes it): containers/podman libpod/oci_conmon_linux.go (createOCIContainer), libpod/container_internal.go (exit command), containers/conmon src/cli.c (options); seen here with podman 4.3.1 + conmon 2.1.6",
		},
		{
			Name:      "podman",
			Cgroup:    re(`(?:^|/)libpod-(?P<id>[0-9a-f]{64})(?:\.scope)?(?:/|$)`),
			Reconcile: []string{"podman", "rm", "--force", "{id}"},
			Inspect:   []string{"podman", "container", "inspect", "{id}"},
			Doc:       "podman container cgroup: libpod_parent/libpod-<id> with the cgroupfs manager, machine.slice/libpod-<id>.scope with systemd (conmon sits in libpod_parent/conmon or libpod-conmon-<id>.scope, outside it): containers/podman libpod/runtime_ctr.go, pkg/specgen/generate (cgroup parent); seen here with podman 4.3.1 --cgroup-manager cgroupfs",
		},
		{
			Name: "nspawn",
			Exe:  re(`(?:^|/)systemd-nspawn$`),
			Argv: re(`(?:^| )(?:-M|--machine)[ =](?P<id>[^ ]+)`),
			Doc:  "systemd-nspawn with a machine name (-M/--machine <name>), with or without machined (--register=no --keep-unit keeps it in the caller's cgroup, the payload in <cgroup>/payload): systemd/systemd src/nspawn/nspawn.c (parse_argv, arg_machine), man systemd-nspawn(1); seen here with systemd-nspawn 252",
		},
		{
			Name: "nspawn",
			Exe:  re(`(?:^|/)systemd-nspawn$`),
			Argv: re(`(?:^| )(?:-D|--directory)[ =](?:[^ ]*/)?(?P<id>[^/ ]+)/?(?: |$)`),
			Doc:  "systemd-nspawn without -M: the machine is named after its directory (-D <dir>): systemd/systemd src/nspawn/nspawn.c (determine_names)",
		},
		{
			Name:        "nspawn",
			Cgroup:      re(`(?:^|/)machine\.slice/systemd-nspawn@(?P<id>[^/]+)\.service(?:/|$)`),
			IDTransform: SystemdUnescape,
			Doc:         "systemd-nspawn run by machinectl start, as the template unit systemd-nspawn@<name>.service (systemd-nspawn --quiet --keep-unit --boot … --machine=<name>): the unit's cgroup holds nspawn itself and the payload in its payload sub-cgroup; the ID is the unescaped instance name: systemd/systemd units/systemd-nspawn@.service.in, src/nspawn/nspawn-cgroup.c; seen in the Debian 12 test host with systemd 252",
		},
		{
			Name:        "kubernetes",
			Cgroup:      re(kubePod),
			IDTransform: UnderscoreToDash,
			Doc:         "Kubernetes pod cgroup, systemd driver (kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid with _>.slice) or cgroupfs (/kubepods/<qos>/pod<uid>); the ID is the pod UID: kubernetes/kubernetes pkg/kubelet/cm/cgroup_manager_linux.go (escapeSystemdCgroupName, ToSystemd, ToCgroupfs)",
		},
		{
			Name:   "docker",
			Cgroup: re(`(?:^|/)docker-(?P<id>[0-9a-f]{64})\.scope(?:/|$)|(?:^|/)docker/(?P<id>[0-9a-f]{64})(?:/|$)`),
			Doc:    "Docker container cgroup, systemd driver (system.slice/docker-<id>.scope) or cgroupfs (/docker/<id>): moby/moby daemon/oci_linux.go (WithCgroups: \"system.slice:docker:<id>\" or /docker/<id>)",
		},
		{
			// Before containerd's /<ns>/<id>: /system.slice/<id> has that
			// shape, and it is runc's.
			Name:               "runc",
			Cgroup:             re(`^(?:/[A-Za-z0-9_@.:-]+\.slice)+/(?P<id>` + dotlessIdent + `)$|(?:^|/)runc-(?P<id>` + ctrdIdent + `)\.scope$`),
			NestedPIDNamespace: true,
			Reconcile:          []string{"runc", "delete", "--force", "{id}"},
			Inspect:            []string{"runc", "state", "{id}"},
			Doc:                "standalone OCI container (runc run -d <id>) on a systemd host: with the cgroupfs driver and no cgroupsPath, runc puts the container beside the caller's cgroup, in its parent slice (/system.slice/<id> from a service, /user.slice/user-<uid>.slice/<id> from a login shell), a plain directory systemd never makes in a slice; with --systemd-cgroup, system.slice/runc-<id>.scope. An ID with a dot is not taken from a slice (it could be a unit's name): opencontainers/runc libcontainer/specconv/spec_linux.go (CreateCgroupConfig: parent system.slice, scope prefix runc), libcontainer/cgroups/fs2/defaultpath.go (a relative path is joined to the parent of runc's own cgroup); seen in the Debian 12 test host with runc 1.1.5 (from a service, a login shell)",
		},
		{
			Name:               "containerd",
			Cgroup:             re(`^/(?P<ns>` + ctrdIdent + `)/(?P<id>` + ctrdIdent + `)$`),
			NestedPIDNamespace: true,
			Doc:                "containerd container cgroup /<namespace>/<id>, the default cgroupsPath containerd gives a container (ctr run, and any client that sets none), for a container in its own pid namespace; found this way alone when its shim is gone: containerd/containerd oci/spec.go (populateDefaultUnixSpec), namespaces and IDs per pkg/identifiers/validate.go; seen here with containerd 1.6.20",
		},
		{
			Name:   "lxc",
			Cgroup: re(`(?:^|/)lxc\.payload\.(?P<id>[^/]+)(?:/|$)`),
			// lxc-start, daemonized, stays as the container's monitor with
			// its argv rewritten, in /lxc.monitor.<name>: it notices the
			// container's death and cleans up, so it is the supervisor.
			Supervisor: Supervisor{Ancestor: re(`^\[lxc monitor\] `)},
			// The container's init is a system init: busybox's reboots on
			// SIGTERM (the busybox template says lxc.signal.reboot =
			// SIGTERM), and the monitor starts a rebooted container again.
			// SIGPWR is LXC's default halt signal, which busybox's init
			// and systemd's (sigpwr-container-shutdown.service) take as
			// "halt".
			HaltSignal: syscall.SIGPWR,
			Doc:        "LXC container (lxc-start -n <name>): the container in the cgroup lxc.payload.<name>, lxc-start's monitor in lxc.monitor.<name> with argv \"[lxc monitor] <lxcpath> <name>\", the container's init its child, halted with SIGPWR as lxc-stop does; named by the container name: lxc/lxc src/lxc/cgroups/cgfsng.c (payload and monitor cgroup names), src/lxc/lxccontainer.c (do_lxcapi_start, which sets the title \"[lxc monitor] %s %s\"; do_lxcapi_shutdown, halt signal SIGPWR unless lxc.signal.halt says otherwise), src/lxc/start.c (an init killed by SIGHUP, a reboot, is started again), templates/lxc-busybox.in (lxc.signal.reboot = SIGTERM); mirror/busybox init/init.c (SIGTERM reboots, SIGPWR halts); seen in the Debian 12 test host with lxc 5.0.2 (busybox template), running and frozen (lxc-freeze)",
		},
		{
			Name:               "runc",
			Cgroup:             re(`^/(?P<id>` + ctrdIdent + `)$`),
			NestedPIDNamespace: true,
			Reconcile:          []string{"runc", "delete", "--force", "{id}"},
			Inspect:            []string{"runc", "state", "{id}"},
			Doc:                "standalone OCI container (runc run -d <id>, or crun run -d <id>, which has the same shape): the runtime exits once the container runs, the container's init is adopted by PID 1, and with no cgroupsPath in config.json its cgroup is /<id>; state in /run/runc/<id> (crun: /run/crun/<id>), listed by runc list: opencontainers/runc libcontainer/specconv/spec_linux.go (CreateCgroupConfig: default cgroup path is the container ID), utils_linux.go (createContainer, default root /run/runc); seen here with runc 1.1.5",
		},
		{
			Name:        "machine",
			Cgroup:      re(`(?:^|/)machine\.slice/machine-(?P<id>[^/]+)\.scope(?:/|$)`),
			IDTransform: SystemdUnescape,
			Doc:         "systemd-machined machine (nspawn container or VM) scope machine.slice/machine-<escaped name>.scope; the ID is the unescaped machine name: systemd/systemd src/machine/machine.c (machine_start_scope)",
		},
	}
	for _, r := range rules {
		r.Source = "preset"
	}
	return rules
})
