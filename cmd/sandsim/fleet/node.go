package fleet

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The environment that tells a re-executed binary which role to play.
const (
	envRole = "SANDSIM_ROLE"
	envNode = "SANDSIM_NODE"

	roleOwner = "owner"
	roleNode  = "node"
)

// The descriptors every node inherits. The owner holds the only write end
// of the lifeline: when the owner dies, however abruptly, every node reads
// EOF and exits, so nothing outlives it. Nodes write one JSON line per
// process to the report pipe once that process is ready; lines shorter
// than PIPE_BUF are written atomically (pipe(7)), so concurrent nodes never
// interleave.
const (
	fdLifeline = 3
	fdReport   = 4
)

// node describes one process that sandsim runs as a re-exec of its own
// binary, under the argv of the real program it imitates.
type node struct {
	// Key identifies the node in reports; unique within a fleet.
	Key  string   `json:"key"`
	Role string   `json:"role"`
	Argv []string `json:"argv"`
	// Comm is the task name; the default is what the kernel would show for
	// the real binary: the basename of argv[0], cut to 15 bytes.
	Comm string `json:"comm,omitempty"`
	Dir  string `json:"dir,omitempty"`
	// Cgroups are directories (v2 and v1) the node moves itself into before
	// it starts anything, so all its descendants inherit them.
	Cgroups  []string `json:"cgroups,omitempty"`
	Setpgid  bool     `json:"setpgid,omitempty"`
	Setsid   bool     `json:"setsid,omitempty"`
	NewPidNS bool     `json:"new_pid_ns,omitempty"`
	// DieWithParent sets PR_SET_PDEATHSIG(SIGKILL), as bwrap
	// --die-with-parent does for its child.
	DieWithParent bool `json:"die_with_parent,omitempty"`
	IgnoreTERM    bool `json:"ignore_term,omitempty"`
	// Listen is a unix socket path to listen on (a supervisor's -address).
	Listen string `json:"listen,omitempty"`
	// Exec replaces this process image with another node, keeping the pid,
	// the way the Firecracker jailer execs firecracker.
	Exec     *node   `json:"exec,omitempty"`
	Children []*node `json:"children,omitempty"`
	Leaves   []*leaf `json:"leaves,omitempty"`
	// Zombies exit at once and are never waited for.
	Zombies []*leaf `json:"zombies,omitempty"`
	// Escape is started through a middle process that exits at once, with
	// Escape in a new session: the classic daemon double fork.
	Escape *node `json:"escape,omitempty"`
	// Daemonize is set on the middle process only.
	Daemonize *node     `json:"daemonize,omitempty"`
	Fork      *forkSpec `json:"fork,omitempty"`
	// ExitAfter makes the node exit by itself once every child it waits
	// for is gone, as conmon does after its container.
	ExitAfter *exitAfter `json:"exit_after,omitempty"`
}

// exitAfter is how a monitor node ends once its children are gone: it
// stays blocked for Delay, writes "137" (its container's death by
// SIGKILL) to File, runs its runtime's cleanup command (a child that
// lasts Cleanup, when that is not zero) and waits for it, and exits.
type exitAfter struct {
	Delay   time.Duration `json:"delay"`
	File    string        `json:"file"`
	Cleanup time.Duration `json:"cleanup,omitempty"`
}

// leaf is a lightweight process: the system's sleep binary, exec'd through
// a symlink named after argv[0] so that the kernel's comm (the basename of
// the executed path, not of argv[0]) matches too.
type leaf struct {
	Key     string   `json:"key"`
	Role    string   `json:"role"`
	Path    string   `json:"path"`
	Argv    []string `json:"argv"`
	Cgroups []string `json:"cgroups,omitempty"`
}

// forkSpec makes a node start a short-lived leaf every Every, with at most
// Max of them alive.
type forkSpec struct {
	Path  string        `json:"path"`
	Argv  []string      `json:"argv"`
	Every time.Duration `json:"every"`
	Max   int           `json:"max"`
}

// comm returns the task name the node sets for itself.
func (n *node) comm() string {
	if n.Comm != "" {
		return n.Comm
	}
	return commOf(n.Argv[0])
}

// commOf is the kernel's task name for an executed path: its basename,
// truncated to TASK_COMM_LEN-1 = 15 bytes.
func commOf(path string) string {
	c := filepath.Base(path)
	if len(c) > 15 {
		c = c[:15]
	}
	return c
}

// reporter is the key of the process that reports for this node: a node
// that execs another reports under the final node's key.
func (n *node) reporter() *node {
	for n.Exec != nil {
		n = n.Exec
	}
	return n
}

// nodeEnv is the environment of a node process.
func nodeEnv(n *node) ([]string, error) {
	b, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("encode node %s: %w", n.Role, err)
	}
	env := []string{envRole + "=" + roleNode, envNode + "=" + string(b)}
	if p, ok := os.LookupEnv("PATH"); ok {
		env = append(env, "PATH="+p)
	}
	// One P keeps the idle Go runtime of each node small; nodes do almost
	// nothing but wait.
	return append(env, "GOMAXPROCS=1", goraceEnv()), nil
}

// goraceEnv keeps the caller's race detector options but drops the
// detector's default one-second sleep at exit (atexit_sleep_ms), which in
// a -race test binary would delay every node and owner that exits.
func goraceEnv() string {
	v := os.Getenv("GORACE")
	if v != "" {
		v += " "
	}
	return "GORACE=" + v + "atexit_sleep_ms=0"
}

// report is one line on the report pipe.
type report struct {
	Key   string `json:"key"`
	PID   int    `json:"pid,omitempty"`
	Start uint64 `json:"start,omitempty"`
	Err   string `json:"err,omitempty"`
}
