package fleet

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// MaybeRun plays the sandsim role this process was started for, if any,
// and exits; otherwise it returns at once. Call it first thing in main()
// of every binary a fleet may re-execute (cmd/sandsim, cmd/sandtop) and in
// TestMain of every package whose tests start fleets: the test binary
// itself then serves as owner and node binary, with no build step.
func MaybeRun() {
	var err error
	switch role := os.Getenv(envRole); role {
	case "":
		return
	case roleOwner:
		err = runOwner()
	case roleNode:
		err = runNode()
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandsim %s: %v\n", os.Getenv(envRole), err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Main is a complete TestMain for packages whose tests start fleets:
//
//	func TestMain(m *testing.M) { fleet.Main(m) }
//
// It runs MaybeRun, makes the test process a child subreaper before any
// test runs (so that nothing a fleet strands is ever re-parented to a PID
// 1 that does not reap), runs the tests, reaps every zombie child left at
// the end, and exits with the tests' status. A package with its own
// TestMain does the same by hand.
func Main(m interface{ Run() int }) {
	MaybeRun()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "fleet.Main: become a subreaper: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	ReapZombies()
	os.Exit(code)
}

// ReapZombies reaps every child of this process that has already exited.
// Only call it when nothing else waits for a child by pid (at the end of a
// test run): it would take the exit status from under exec.Cmd.Wait.
func ReapZombies() {
	for {
		pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
		if pid <= 0 || (err != nil && err != unix.EINTR) {
			return
		}
	}
}
