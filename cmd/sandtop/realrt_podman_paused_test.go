package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc/proctest"
)

// podmanPausedRuns is how often TestPodmanReconcilePaused kills a paused
// container; SANDTOP_PODMAN_RUNS overrides it.
const podmanPausedRuns = 20

// TestPodmanReconcilePaused kills a paused podman container with
// kill --force --reconcile, again and again, on a private podman: each run
// must exit 0 with the reconcile step OK, quote what podman's own inspect
// said, and leave the container gone from podman ps -a. Killed behind
// podman's back, a paused container's monitor (conmon) races the teardown
// to record the exit, and podman's own cleanup races the reconcile; before
// the teardown let conmon finish, podman kept the container as Paused and
// refused every rm --force (it tries to unpause it first).
func TestPodmanReconcilePaused(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts podman containers")
	}
	proctest.RequireRoot(t)
	runs := podmanPausedRuns
	if v, err := strconv.Atoi(os.Getenv("SANDTOP_PODMAN_RUNS")); err == nil && v > 0 {
		runs = v
	}
	r := &rt{t: t, tag: "srt" + randHex(4)}
	r.dir = t.TempDir()
	t.Cleanup(func() {
		if !t.Skipped() {
			r.leakCheck()
		}
	})
	pm, runC := r.podmanEnv()
	failures := 0
	var took []time.Duration
	for i := range runs {
		name := r.tag + "-" + strconv.Itoa(i)
		id := runC(name, "sleep 100001 & exec sleep 100002")
		r.mustSandbox("podman:"+id, 3)
		pm("pause", id)
		var sb *model.SandboxJSON
		waitUntil(10*time.Second, func() bool {
			sb = r.sandbox("podman:" + id)
			return sb != nil && hasBadge(sb, model.BadgePaused)
		})
		if sb == nil || !hasBadge(sb, model.BadgePaused) {
			t.Fatalf("run %d: podman pause did not show: %+v", i, sb)
		}
		start := time.Now()
		args := []string{"kill", "--audit-log", r.dir + "/audit.jsonl", "--force", "--grace", "1s", "--reconcile", name}
		code, out, errOut := sandtop(t, args...)
		took = append(took, time.Since(start))
		ps := pm("ps", "-a", "--format", "{{.ID}} {{.Status}}")
		switch {
		case code != 0 || !strings.Contains(out, "[OK]   reconcile"):
			failures++
			t.Errorf("run %d: exit %d:\n%s%s\npodman ps -a:\n%s", i, code, out, errOut, ps)
		case !strings.Contains(out, "container inspect "+id+" says: "):
			failures++
			t.Errorf("run %d: the reconcile step does not quote podman's inspect:\n%s", i, out)
		case strings.Contains(ps, id[:12]):
			failures++
			t.Errorf("run %d: podman still lists the container:\n%s\nafter:\n%s", i, ps, out)
		}
		if i == 0 {
			t.Logf("run 0:\n%s", out)
		}
		r.wantGone("paused podman container", identities(sb))
	}
	t.Logf("podman reconcile of a paused container: %d runs, %d failures; kill took %v", runs, failures, took)
}
