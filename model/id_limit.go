package model

import (
	"crypto/sha256"
	"fmt"
	"strings"
)

// MaxIDBytes bounds a sandbox ID (and a runtime namespace) as captured.
// It is NAME_MAX: a directory name, a cgroup or a network namespace's
// name can be no longer, so every ID a runtime makes fits, and only a
// process's own argv, flag or cwd can carry a longer one.
const MaxIDBytes = 255

// refusedIDMark ends an ID that was refused for its length. It holds a
// "/", so a refused ID is never one path component: cleanup, leftovers
// and reconcile refuse it (cleanupValueProblem, checkVars), and only its
// processes are torn down.
const refusedIDMark = "-byte ID refused/"

// boundID returns id when it is within MaxIDBytes, else its refused form:
// its first 32 bytes, its length and a digest of it, which says why
// without printing it all, and keeps two long IDs with the same start two
// sandboxes.
func boundID(id string) string {
	if len(id) <= MaxIDBytes {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return fmt.Sprintf("%s…%d%slimit %d, sha256 %x", id[:32], len(id), refusedIDMark, MaxIDBytes, sum[:6])
}

// IsRefusedID reports whether id is an ID boundID refused.
func IsRefusedID(id string) bool {
	return strings.Contains(id, refusedIDMark)
}
