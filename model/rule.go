package model

import (
	"regexp"
	"syscall"
)

// Rule says how one runtime's processes are recognised and where the
// sandbox ID comes from. Every matcher that is set must match; the ID is the
// named group "id" of whichever matcher captured it, or the Flag's value.
type Rule struct {
	// Name is shown as the sandbox's runtime.
	Name string
	// Exe is matched against argv[0], then against the exe path.
	Exe *regexp.Regexp
	// Comm is matched against /proc/PID/comm (truncated to 15 bytes by the kernel).
	Comm *regexp.Regexp
	// Argv is matched against argv joined by single spaces.
	Argv *regexp.Regexp
	// ExcludeArgv, when it matches argv joined by single spaces, stops the
	// rule from matching (RE2 has no negative lookahead), e.g. containerd's
	// short-lived "start" and "delete" shim invocations.
	ExcludeArgv *regexp.Regexp
	// Flag names a command-line flag whose value is the ID: "--id X" or
	// "--id=X", with the flag as an exact token. A one-dash flag ("-id")
	// also matches "--id", as Go's flag package does (see FlagValue).
	Flag string
	// Cgroup is matched against the cgroup v2 path (the v1 freezer path on
	// hosts where the process has no v2 cgroup).
	Cgroup *regexp.Regexp
	// OwnCgroup recognises, in a whole cgroup path, a cgroup the runtime
	// gives one sandbox at a time although its path names no ID
	// (CubeSandbox's numbered pool slots): a layout the rule knows, which
	// lets that cgroup be the sandbox's dedicated one. It does not take
	// part in matching a process.
	OwnCgroup *regexp.Regexp
	// Cwd is matched against the process's working directory.
	Cwd *regexp.Regexp
	// IDTransform rewrites the captured ID into the runtime's own spelling
	// (a regex can capture text but not rewrite it).
	IDTransform IDTransform
	// NamespaceFlag names a command-line flag whose value is the runtime's
	// namespace ("-namespace" for a containerd shim); a named capture "ns"
	// in any matcher does the same. A sandbox's identity is its runtime,
	// namespace and ID: the same ID in two namespaces is two sandboxes.
	NamespaceFlag string
	// NestedPIDNamespace makes the rule match only a process that lives in
	// a pid namespace below the scanned one (NSpid has more than one
	// entry): what tells a container's cgroup, whose path alone could be
	// anyone's, from a host service's.
	NestedPIDNamespace bool
	// ProcessGroup puts the matched process's whole process group in the sandbox.
	ProcessGroup bool
	// Guest marks the process the rule recognises as the one that runs
	// the sandbox's guest (a VMM, gVisor's Sentry): its cost is the
	// workload as the host sees it. Without it, a process a rule
	// recognises is the runtime's own (a shim, conmon, a jailer), and its
	// cost is overhead. A process recognised by its cgroup alone is
	// neither: it is where it lives that says.
	Guest bool
	// ExitsAfterWorkload marks the process the rule recognises as a
	// monitor that exits by itself once its workload has, after recording
	// the exit for its runtime (podman's conmon writes the exit file podman
	// reads and runs podman's cleanup). A teardown gives it time to finish
	// before stopping it: killed mid-way, it leaves its runtime believing
	// the container still runs, or is paused. Without it, a monitor left
	// idle once its workload is gone is taken to be waiting to be told (a
	// containerd shim) and is killed.
	ExitsAfterWorkload bool
	// HaltSignal is the signal the runtime asks its container's init to
	// halt with (LXC's lxc.signal.halt). A teardown sends it, in place of
	// SIGTERM, to the member that is the init of the sandbox's pid
	// namespace: a system init takes SIGTERM to mean reboot (busybox) or
	// re-exec (systemd), and a runtime restarts a container whose init
	// rebooted, so SIGTERM would bring the sandbox back after the kill
	// said it was gone. 0 for SIGTERM.
	HaltSignal syscall.Signal
	// Supervisor tells how to find the process that owns the sandbox; a
	// sandbox whose rule names a supervisor that cannot be found is an orphan.
	Supervisor Supervisor
	// Cleanup paths are removed after an orphan is killed. "{id}" and any
	// other named capture group ("{base}") are substituted.
	Cleanup []string
	// Leftovers are extra templates, beyond Cleanup, of paths a dead
	// sandbox of this runtime may leave behind; their placeholders other
	// than {id} are given explicitly (a glob root: "/var/lib/vm0/workspaces/{id}").
	Leftovers []string
	// Reconcile is the runtime's own command that makes it notice a
	// sandbox killed behind its back (podman rm -f {id}), as argv
	// templates with the captures substituted like Cleanup. The done step
	// prints it; kill --reconcile runs it. It comes from the rule only,
	// never from a process's argv.
	Reconcile []string
	// Inspect is the runtime's own command that prints its view of the
	// sandbox (podman container inspect {id}, runc state {id}), argv
	// templates like Reconcile: kill --reconcile runs it afterwards and
	// quotes what the runtime says, instead of guessing.
	Inspect []string
	// Source says where the rule was defined: "file:line" or "preset".
	Source string
	// Doc is a one-line description; presets cite the runtime source the
	// shape comes from.
	Doc string
}

// onlyCgroup reports whether the rule recognises a process by its cgroup
// alone: what it finds is wherever the process lives, not what it is.
func (r *Rule) onlyCgroup() bool {
	return r.Cgroup != nil && r.Exe == nil && r.Comm == nil && r.Argv == nil && r.Flag == "" && r.Cwd == nil
}

// Supervisor describes how a sandbox's owner is recognised.
type Supervisor struct {
	// Ancestor is matched against the argv (joined by spaces) of each
	// ancestor of the sandbox's root, up to 16 levels.
	Ancestor *regexp.Regexp
	// SocketFlag names a flag of the matched process whose value is a unix
	// socket path; the supervisor is alive while something listens on it.
	SocketFlag string
}

// IsZero reports whether no supervisor is configured.
func (s Supervisor) IsZero() bool { return s.Ancestor == nil && s.SocketFlag == "" }

// Match is the result of a rule matching one process.
type Match struct {
	Rule *Rule
	ID   string
	// Namespace is the runtime's namespace (containerd's -namespace), ""
	// when the rule captured none.
	Namespace string
	// By names the matcher that yielded the ID: "exe", "comm", "argv",
	// "flag", "cgroup" or "cwd".
	By string
	// Vars holds every named capture group of every matcher (including "id").
	Vars map[string]string
}
