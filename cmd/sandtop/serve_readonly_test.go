package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
)

// writeCall matches the strace lines of calls that could change the host's
// files: an open for writing or creating, and the calls that make, remove
// or rename a path (cgroup.kill, cgroup.freeze and freezer.state are
// opened for writing; a cgroup is made with mkdir and removed with rmdir).
var writeCall = regexp.MustCompile(`^\d+\s+(?:(?:open|openat|openat2)\(.*(?:O_WRONLY|O_RDWR|O_CREAT|O_TRUNC)|(?:mkdir|mkdirat|rmdir|unlink|unlinkat|rename|renameat|renameat2|truncate|ftruncate)\()`)

// TestTortureReadOnlyServe proves on the real program what the exporter
// package's imports promise: `sandtop serve`, beside a fleet with a frozen
// sandbox and an orphan, scanning every 100 ms and asked every endpoint
// with every method (and paths that sound like actions), under strace,
// sends no signal beyond its own threads, opens no pidfd, and opens no
// file for writing, cgroup files included.
func TestTortureReadOnlyServe(t *testing.T) {
	lookTool(t, "strace")
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0},
		{Name: "orphan", Runtime: fleet.Containerd, Orphan: true},
		{Name: "paused", Runtime: fleet.Cube, Pause: fleet.PauseFreeze},
	}})
	trace := filepath.Join(t.TempDir(), "strace.out")
	s := startServe(t, []string{"strace", "-f", "-qq", "-o", trace,
		"-e", "trace=kill,tkill,tgkill,pidfd_send_signal,rt_sigqueueinfo,rt_tgsigqueueinfo,pidfd_open," +
			"open,openat,openat2,mkdir,mkdirat,rmdir,unlink,unlinkat,rename,renameat,renameat2,truncate,ftruncate,exit_group"},
		"--interval", "100ms", "--per-sandbox")
	waitHealthy(t, s)

	requests := 0
	paths := []string{"/metrics", "/api/v1/sandboxes", "/api/v1/sandboxes?all=1", "/healthz", "/",
		"/kill", "/api/v1/sandboxes/" + f.Manifest().Sandbox("orphan").ID, "/api/v1/kill?id=" + f.Manifest().Sandbox("paused").ID}
	deadline := time.Now().Add(3 * time.Second)
	if testing.Short() {
		deadline = time.Now().Add(time.Second)
	}
	for time.Now().Before(deadline) {
		for _, p := range paths {
			for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"} {
				httpGet(t, m, s.url+p, "Accept", "application/openmetrics-text")
				requests++
			}
		}
	}
	// Stop it and let strace write its last lines.
	pid := s.pid
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			t.Errorf("sandtop serve under strace: %v\n%s", err, s.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("sandtop serve did not exit on SIGTERM")
	}
	s.pid = 0 // stopped: nothing for the cleanup to signal

	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	tgid := strconv.Itoa(pid)
	own := map[string]bool{tgid: true}
	for _, l := range lines {
		if fl := strings.Fields(l); len(fl) > 0 {
			own[fl[0]] = true
		}
	}
	var runtimeSignals, opens int
	for _, l := range lines {
		if strings.Contains(l, "open") {
			opens++
		}
		// The test harness writes the child's pid before serve starts.
		if writeCall.MatchString(l) && !strings.Contains(l, `"`+s.pidFile+`"`) {
			t.Errorf("serve made a call that writes: %s", l)
		}
		switch classifySignalCall(l, tgid, own) {
		case ownSignal:
			runtimeSignals++
		case foreignSignal:
			t.Errorf("serve made a signal call: %s", l)
		}
	}
	t.Logf("TORTURE serve: requests=%d own_thread_signals=%d opens=%d pidfd_opens=%d", requests, runtimeSignals, opens, strings.Count(string(data), "pidfd_open("))
	if opens < 100 {
		t.Errorf("strace saw %d opens: the scans were not traced, so the check proved nothing", opens)
	}
	// The paused sandbox is still paused: nothing thawed it.
	if sb := find(listJSON(t), f.Manifest().Sandbox("paused").ID); sb == nil || !sb.Frozen {
		t.Errorf("the frozen sandbox is no longer frozen after serve ran: %+v", sb)
	}
}
