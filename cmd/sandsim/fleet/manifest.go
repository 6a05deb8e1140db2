package fleet

import (
	"github.com/sandtop/sandtop/proc"
)

// Roles that mark special members in a manifest.
const (
	RoleZombie  = "zombie"  // exited, never waited for: state Z
	RoleEscaped = "escaped" // double-forked into its own session, re-parented to the owner
	RoleLeaf    = "worker"  // a bulk `sleep infinity` leaf
)

// Manifest is everything a fleet started and made, as the owner reports it
// once every process is ready.
type Manifest struct {
	Scenario string `json:"scenario,omitempty"`
	// Owner is the fleet's owner process: the child subreaper that every
	// orphaned member is re-parented to (PID 1 on a real host).
	Owner Process `json:"owner"`
	// Base is the temp directory holding every file the fleet made.
	Base string `json:"base"`
	// Cgroup and Freezer are the fleet's own v2 and v1-freezer cgroup
	// directories, as paths in /proc/PID/cgroup ("" when unusable).
	Cgroup  string `json:"cgroup,omitempty"`
	Freezer string `json:"freezer,omitempty"`
	// CgroupDirs lists every cgroup directory the owner made, on disk.
	CgroupDirs []string `json:"cgroup_dirs,omitempty"`
	// Rootful says the owner ran as root (pid namespaces need it).
	Rootful     bool      `json:"rootful"`
	Sandboxes   []Sandbox `json:"sandboxes"`
	Supervisors []Process `json:"supervisors,omitempty"`
	Bystanders  []Process `json:"bystanders,omitempty"`
	Notes       []string  `json:"notes,omitempty"`
}

// Sandbox is one sandbox of a running fleet.
type Sandbox struct {
	Name    string  `json:"name"`
	ID      string  `json:"id"`
	Runtime Runtime `json:"runtime"`
	// AltIDs are other IDs that name the same sandbox (the pod sandbox and
	// container IDs of a Kubernetes pod, whose ID is the pod UID).
	AltIDs []string `json:"alt_ids,omitempty"`
	// Spec is the sandbox as requested, with its ID filled in.
	Spec SandboxSpec `json:"spec"`
	// Orphan is true once the supervisor has been killed.
	Orphan bool `json:"orphan,omitempty"`
	// Paused is how the sandbox is paused right now, which can differ from
	// Spec.Pause when the host cannot do what was asked (see Notes).
	Paused Pause `json:"paused,omitempty"`
	// PidNS is true when a member runs in a nested pid namespace.
	PidNS bool `json:"pidns,omitempty"`
	// Cgroup and Freezer are the sandbox's own cgroups as paths in
	// /proc/PID/cgroup; CgroupDir and FreezerDir are their directories.
	Cgroup     string `json:"cgroup,omitempty"`
	CgroupDir  string `json:"cgroup_dir,omitempty"`
	Freezer    string `json:"freezer,omitempty"`
	FreezerDir string `json:"freezer_dir,omitempty"`
	// Dirs are the directories made for this sandbox (workspace, box dir,
	// bundle), all below Manifest.Base.
	Dirs []string `json:"dirs,omitempty"`
	// Processes are the sandbox's processes, root first, in tree pre-order.
	// This is everything sandsim started for the sandbox, which may include
	// processes sandtop rightly treats as supervisors (the gVisor shim).
	Processes []Process `json:"processes"`
	// Supervisor is the process whose death orphans the sandbox, if any.
	Supervisor *Process `json:"supervisor,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// Process is one process of a fleet.
type Process struct {
	proc.Identity
	Role string `json:"role"`
	// Argv is what the process was started with. A zombie's
	// /proc/PID/cmdline is empty.
	Argv []string `json:"argv"`
	// Comm is the task name it shows in /proc/PID/comm.
	Comm string `json:"comm"`
}

// Sandbox returns the sandbox with this ID or name, or nil.
func (m Manifest) Sandbox(idOrName string) *Sandbox {
	for i := range m.Sandboxes {
		if s := &m.Sandboxes[i]; s.ID == idOrName || s.Name == idOrName {
			return s
		}
	}
	return nil
}

// Processes returns every process of the fleet except the owner:
// supervisors, sandbox members and bystanders.
func (m Manifest) Processes() []Process {
	out := append([]Process(nil), m.Supervisors...)
	for _, s := range m.Sandboxes {
		out = append(out, s.Processes...)
	}
	return append(out, m.Bystanders...)
}

// Root returns the sandbox's root process.
func (s *Sandbox) Root() Process { return s.Processes[0] }

// Role returns the sandbox's processes with the role.
func (s *Sandbox) Role(role string) []Process {
	var out []Process
	for _, p := range s.Processes {
		if p.Role == role {
			out = append(out, p)
		}
	}
	return out
}
