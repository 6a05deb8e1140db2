package fleet

// The owner talks to Start/Close over its stdin and stdout, one JSON value
// per line. Stdin carries a startRequest, then commands; closing stdin
// asks for teardown. Stdout carries the manifest (or a start error), one
// reply per command, and finally the teardown result.

// startRequest is the first line the owner reads.
type startRequest struct {
	Spec Spec `json:"spec"`
	// Dir is where the owner makes its temp directory ("" = os.TempDir()).
	Dir string `json:"dir,omitempty"`
}

// The commands.
const (
	opKillSupervisor   = "kill-supervisor"
	opBounceSupervisor = "bounce-supervisor"
	opFreeze           = "freeze"
	opThaw             = "thaw"
)

type command struct {
	Op string `json:"op"`
	// ID is a sandbox ID or name.
	ID string `json:"id"`
}

type ownerMsg struct {
	Manifest *Manifest `json:"manifest,omitempty"`
	Reply    *reply    `json:"reply,omitempty"`
	Done     *done     `json:"done,omitempty"`
	// Error is a failed start; the owner has cleaned up and exits.
	Error string `json:"error,omitempty"`
}

// reply answers one command with the sandboxes it changed.
type reply struct {
	Error     string    `json:"error,omitempty"`
	Sandboxes []Sandbox `json:"sandboxes,omitempty"`
}

// done is the teardown result: every error, including survivors.
type done struct {
	Errors []string `json:"errors,omitempty"`
}
