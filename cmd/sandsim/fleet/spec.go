package fleet

import (
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"
)

// Runtime names a sandbox runtime whose host-side process shape sandsim
// imitates: the process trees, cgroups and sockets the real runtime leaves
// on a host, as the builder of each runtime (runtime_*.go) describes them.
type Runtime string

// The simulated runtimes.
const (
	VM0        Runtime = "vm0"        // runner -> sudo -> ip netns exec -> sudo -u -> firecracker
	Jailer     Runtime = "jailer"     // jailer exec'ing firecracker in place
	Boxlite    Runtime = "boxlite"    // bwrap -> bwrap (pid-ns init) -> boxlite-shim
	Cube       Runtime = "cube"       // containerd-shim-cube-rs, cubelet on -address
	Containerd Runtime = "containerd" // containerd-shim-runc-v2 with pause and app
	Docker     Runtime = "docker"     // runc shim, container in docker-<id>.scope
	Kata       Runtime = "kata"       // containerd-shim-kata-v2 -> qemu
	GVisor     Runtime = "gvisor"     // containerd-shim-runsc-v1 -> runsc-sandbox, runsc-gofer
	Kubernetes Runtime = "k8s"        // pod: shim -> pause + app in kubepods scopes
	Machine    Runtime = "machine"    // qemu in machine.slice/machine-<escaped>.scope
	Cloudflare Runtime = "cloudflare" // container running `bash --norc` session trees
	Podman     Runtime = "podman"     // conmon (no daemon) -> container in libpod_parent/libpod-<id>
)

// Runtimes lists every runtime in a stable order.
var Runtimes = []Runtime{VM0, Jailer, Boxlite, Cube, Containerd, Docker, Kata, GVisor, Kubernetes, Machine, Cloudflare, Podman}

// Pause says how a sandbox is paused once it is up.
type Pause string

// Ways of pausing a sandbox.
const (
	NotPaused      Pause = ""
	PauseFreeze    Pause = "freeze"     // cgroup v2 cgroup.freeze
	PauseFreezerV1 Pause = "freezer-v1" // cgroup v1 freezer.state FROZEN
	PauseStop      Pause = "sigstop"    // SIGSTOP to every member
)

// Spec describes a fleet: which sandboxes to build and which bystanders to
// put next to them.
type Spec struct {
	// Scenario is the name the spec was built from, for the manifest.
	Scenario string `json:"scenario,omitempty"`
	// Seed makes generated IDs reproducible (for screenshots). Zero means
	// random IDs, which is what concurrent tests want: two fleets on one
	// host must never show the same sandbox ID.
	Seed       uint64          `json:"seed,omitempty"`
	Sandboxes  []SandboxSpec   `json:"sandboxes"`
	Bystanders []BystanderSpec `json:"bystanders,omitempty"`
}

// SandboxSpec is one sandbox and the behaviours it should show. The
// behaviours apply to one member, the runtime's workload process unless On
// names another role.
type SandboxSpec struct {
	// Name labels the sandbox within the fleet; bystanders and tests refer to
	// it. Defaults to "<runtime>-<n>".
	Name    string  `json:"name,omitempty"`
	Runtime Runtime `json:"runtime"`
	// ID is generated in the runtime's shape when empty.
	ID string `json:"id,omitempty"`

	// Orphan kills the sandbox's supervisor once everything is up. A
	// sandbox with Orphan set gets a supervisor of its own, so that no
	// other sandbox is orphaned with it.
	Orphan bool `json:"orphan,omitempty"`
	// Supervisor groups sandboxes that share one supervisor process (one
	// containerd for several shims). Empty means the runtime's shared one.
	Supervisor string `json:"supervisor,omitempty"`
	// Detached applies to boxlite: a detached box's outer bwrap is a child
	// of the fleet owner (PPID 1 on a real host); otherwise it is a child of
	// a `boxlite` CLI process and carries --die-with-parent.
	Detached bool `json:"detached,omitempty"`
	// SystemdCgroups applies to podman: the layout podman's systemd cgroup
	// manager gives a container run from a login shell, conmon in a scope
	// of its own next to the container's (see runtime_podman.go), instead
	// of the cgroupfs manager's libpod_parent.
	SystemdCgroups bool `json:"systemd_cgroups,omitempty"`
	// ConmonExit applies to podman: once its container has exited, conmon
	// stays blocked this long (as a real one may on a slow host, draining
	// the container's output into its log), then writes the exit code
	// into podman's exit directory and exits, as conmon does. Zero keeps
	// conmon running after its container, as a wedged one would.
	ConmonExit time.Duration `json:"conmon_exit,omitempty"`
	// ConmonCleanup, with ConmonExit, is how long podman's cleanup
	// command, which conmon runs as its child and waits for after writing
	// the exit file, takes.
	ConmonCleanup time.Duration `json:"conmon_cleanup,omitempty"`
	Pause         Pause         `json:"pause,omitempty"`
	// Bare leaves out the named workload processes (pause, app) of the
	// container runtimes, so a bulk sandbox costs one Go process plus its
	// leaves.
	Bare bool `json:"bare,omitempty"`

	// On names the role that shows the behaviours below; "" is the
	// runtime's workload process (firecracker, boxlite-shim, app, …).
	On string `json:"on,omitempty"`
	// Zombies is the number of children that exit and are never waited for.
	Zombies int `json:"zombies,omitempty"`
	// Escape double-forks a child that calls setsid() and is re-parented to
	// the fleet owner while staying in the sandbox's cgroup.
	Escape bool `json:"escape,omitempty"`
	// IgnoreTERM sets SIGTERM to SIG_IGN (which the member's children
	// inherit, as SIG_IGN survives fork and execve).
	IgnoreTERM bool `json:"ignore_term,omitempty"`
	// Forker keeps forking short-lived children (one every ~20 ms, a few
	// alive at a time).
	Forker bool `json:"forker,omitempty"`
	// Leaves is the number of lightweight `sleep infinity` children, for
	// scale tests. In the container runtimes they are container processes
	// (children of the shim, in the container's cgroup).
	Leaves int `json:"leaves,omitempty"`
}

// BystanderSpec is a process that belongs to no sandbox but stands close
// to one, to prove that sandtop does not over-attribute.
type BystanderSpec struct {
	// Role names the bystander in the manifest.
	Role string   `json:"role"`
	Argv []string `json:"argv"`
	// CgroupOf names a sandbox whose root process's cgroup the bystander
	// joins (for a shim, the shared containerd.service cgroup).
	CgroupOf string `json:"cgroup_of,omitempty"`
	// SiblingOf names a sandbox; the bystander is started by the same
	// process that started the sandbox's root (the runner, or the owner).
	SiblingOf string `json:"sibling_of,omitempty"`
}

// validName is compiled on first use: sandtop links this package for its
// demo, and the counted repeat makes a program of some 64 copies, a
// millisecond or two of every sandtop command's start-up otherwise.
var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })

// maxBehaviour bounds the per-sandbox counts, so a typo cannot fork-bomb
// the host. bulk:N spreads leaves over many sandboxes instead.
const maxBehaviour = 1000

// withDefaults returns a copy of the spec with names filled in.
func (s Spec) withDefaults() Spec {
	out := s
	out.Sandboxes = append([]SandboxSpec(nil), s.Sandboxes...)
	count := map[Runtime]int{}
	for i := range out.Sandboxes {
		sb := &out.Sandboxes[i]
		count[sb.Runtime]++
		if sb.Name == "" {
			sb.Name = fmt.Sprintf("%s-%d", sb.Runtime, count[sb.Runtime])
		}
	}
	return out
}

// Validate reports every problem with the spec at once.
func (s Spec) Validate() error {
	var errs []error
	names := map[string]bool{}
	ids := map[string]bool{}
	known := map[Runtime]bool{}
	for _, r := range Runtimes {
		known[r] = true
	}
	for i, sb := range s.withDefaults().Sandboxes {
		where := fmt.Sprintf("sandbox %d (%s)", i, sb.Name)
		if !known[sb.Runtime] {
			errs = append(errs, fmt.Errorf("%s: unknown runtime %q", where, sb.Runtime))
		}
		if names[sb.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate name", where))
		}
		if !validName().MatchString(sb.Name) {
			// Names end up in socket file names.
			errs = append(errs, fmt.Errorf("%s: name must match %v", where, validName()))
		}
		names[sb.Name] = true
		if sb.ID != "" {
			if ids[sb.ID] {
				errs = append(errs, fmt.Errorf("%s: duplicate id %q", where, sb.ID))
			}
			ids[sb.ID] = true
		}
		if sb.SystemdCgroups && sb.Runtime != Podman {
			errs = append(errs, fmt.Errorf("%s: systemd_cgroups applies to podman only", where))
		}
		if sb.ConmonExit != 0 && (sb.Runtime != Podman || sb.Bare || sb.ConmonExit < 0) {
			errs = append(errs, fmt.Errorf("%s: conmon_exit applies to a podman container with a workload only, and is not negative", where))
		}
		if sb.ConmonCleanup != 0 && (sb.ConmonExit == 0 || sb.ConmonCleanup < 0) {
			errs = append(errs, fmt.Errorf("%s: conmon_cleanup goes with conmon_exit, and is not negative", where))
		}
		switch sb.Pause {
		case NotPaused, PauseFreeze, PauseFreezerV1, PauseStop:
		default:
			errs = append(errs, fmt.Errorf("%s: unknown pause %q", where, sb.Pause))
		}
		if sb.Zombies < 0 || sb.Zombies > maxBehaviour {
			errs = append(errs, fmt.Errorf("%s: zombies = %d, want 0..%d", where, sb.Zombies, maxBehaviour))
		}
		if sb.Leaves < 0 || sb.Leaves > maxBehaviour {
			errs = append(errs, fmt.Errorf("%s: leaves = %d, want 0..%d", where, sb.Leaves, maxBehaviour))
		}
	}
	for i, b := range s.Bystanders {
		where := fmt.Sprintf("bystander %d (%s)", i, b.Role)
		if len(b.Argv) == 0 {
			errs = append(errs, fmt.Errorf("%s: empty argv", where))
		}
		for _, ref := range []string{b.CgroupOf, b.SiblingOf} {
			if ref != "" && !names[ref] {
				errs = append(errs, fmt.Errorf("%s: no sandbox named %q", where, ref))
			}
		}
	}
	return errors.Join(errs...)
}
