// Command sandtop shows the sandbox process trees on a Linux host and tears
// them down safely.
package main

import (
	"os"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
)

func main() {
	// sandtop re-executes itself as the demo fleet's processes.
	fleet.MaybeRun()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
