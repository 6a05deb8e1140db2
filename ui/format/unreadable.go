package format

import "os"

// asRoot is read once: sandtop's effective uid does not change while it runs.
var asRoot = os.Geteuid() == 0

// Unreadable tells the operator that n processes could not be read in full
// and, unless sandtop already runs as root, what would help. Even root
// cannot read everything: on some hosts PID 1's exe and cwd are closed to
// every other process.
func Unreadable(n int) string {
	s := Count(n, "process", "processes") + " partly unreadable"
	if !asRoot {
		s += ": run as root"
	}
	return s
}

// PartialNote is the detail pane's line for a process read in part.
func PartialNote() string {
	if asRoot {
		return "some fields could not be read (the kernel refuses them even to root)"
	}
	return "some fields could not be read: run as root"
}
