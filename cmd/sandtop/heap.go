package main

import (
	"os"
	"runtime/debug"
)

// longRunGOGC is the garbage collector's target for the commands that run
// for days on a production host: the screen, serve, reap, record. Go's
// default (100) lets the heap grow to twice what is live before it
// collects; at 10,000 processes the live heap of the screen is about
// 20 MB, so that headroom was a quarter of its resident memory. At 40,
// the screen's RSS at 10,000 processes measured 46 MiB instead of 56-59,
// for under 1% more CPU per refresh: a refresh makes under 2 MB of
// garbage, so collections stay rare.
const longRunGOGC = 40

// longRunning sets the collector for a long-running command, unless the
// user chose with GOGC.
func longRunning() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(longRunGOGC)
	}
}
