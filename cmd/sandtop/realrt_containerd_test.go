package main

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc/proctest"
)

// containerd runs a private containerd (its own config, root, state and
// socket) and checks, with ctr: the same container ID in two namespaces
// and a five-character ID (identity, dedicated cgroups, an ambiguous ID
// refused), a shim whose container was killed under it (hollow), a
// paused container (the workload frozen, the shim not), a
// graceful kill of it with a SIGTERM-ignoring double-forked child, orphan
// after SIGKILL of containerd and not after its restart, and a shim
// crashed while containerd is down (its container is a cgroup-only
// sandbox, an orphan, and kill --grace 0 takes it down), with
// containerd's own view after each kill.
func (r *rt) containerd() {
	r.need("containerd", "ctr", "runc")
	d := r.shortDir()
	sock := filepath.Join(d, "c.sock")
	cfg := filepath.Join(d, "config.toml")
	r.writeFile(cfg, fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  disable_apparmor = true
`, filepath.Join(d, "root"), filepath.Join(d, "state"), sock, sock+".ttrpc"), 0o644)
	start := func() *daemonProc {
		c := r.daemon("containerd", "containerd", "--config", cfg)
		if !waitUntil(30*time.Second, func() bool {
			conn, err := net.Dial("unix", sock)
			if err == nil {
				conn.Close()
			}
			return err == nil
		}) {
			r.skip("containerd did not listen on %s: %s", sock, r.logOf("containerd"))
		}
		return c
	}
	daemon := start()
	rootfs := proctest.BusyboxRoot(r.t, filepath.Join(d, "rootfs"))
	nsA, nsB := r.tag+"-a", r.tag+"-b"
	ctr := func(ns string, args ...string) string {
		return r.cmd(append([]string{"ctr", "-a", sock, "-n", ns}, args...)...)
	}
	shimOf := map[string]int{}
	run := func(ns, id, script string) {
		ctr(ns, "run", "-d", "--rootfs", rootfs, id, "/bin/sh", "-c", script)
		r.t.Cleanup(func() {
			_, _ = r.try("ctr", "-a", sock, "-n", ns, "task", "rm", "-f", id)
			_, _ = r.try("ctr", "-a", sock, "-n", ns, "container", "rm", id)
		})
	}
	r.t.Cleanup(func() {
		for _, ns := range []string{nsA, nsB} {
			_, _ = r.try("ctr", "-a", sock, "namespace", "rm", ns)
		}
		// containerd leaves the namespace's parent cgroup behind.
		removeCgroups(nsA, nsB)
	})
	// web in team A: a child that ignores SIGTERM and escaped its parent
	// by a double fork; web in team B; a five-character ID in team A.
	run(nsA, "web", `(sh -c 'trap "" TERM; exec sleep 100002' &) ; exec sleep 100001`)
	run(nsB, "web", `exec sleep 100003`)
	run(nsA, "w3b34", `sleep 100004 & exec sleep 100005`)
	a := r.mustSandbox("containerd:"+nsA+"/web", 3)
	b := r.mustSandbox("containerd:"+nsB+"/web", 2)
	short := r.mustSandbox("containerd:"+nsA+"/w3b34", 3)
	for _, sb := range []*model.SandboxJSON{a, b, short} {
		if want := "/" + sb.Namespace + "/" + sb.ID; sb.Cgroup != want || sb.Runtime != "containerd" || len(sb.Badges) != 0 {
			r.t.Errorf("%s: cgroup %q (want %q), runtime %q, badges %v", sb.Key, sb.Cgroup, want, sb.Runtime, sb.Badges)
		}
		shimOf[sb.Name] = sb.RootPID
	}
	r.hollowShim(nsB, run, ctr)
	out := r.kill(exitUsage, "--force", "web")
	if !strings.Contains(out, nsA+"/web") || !strings.Contains(out, nsB+"/web") || !strings.Contains(out, "sandboxes; say which") {
		r.t.Errorf("an ID in two namespaces: %s", out)
	}

	// Paused: the container's cgroup frozen, the shim outside it running.
	ctr(nsA, "task", "pause", "w3b34")
	var paused *model.SandboxJSON
	waitUntil(10*time.Second, func() bool {
		paused = r.sandbox("containerd:" + nsA + "/w3b34")
		return paused != nil && hasBadge(paused, model.BadgePaused)
	})
	if paused == nil || !hasBadge(paused, model.BadgePaused) || !paused.Frozen || !strings.Contains(paused.Paused, "workload frozen") {
		r.t.Fatalf("ctr task pause: %+v", paused)
	}
	bystanders := append(identities(a), identities(b)...)
	r.kill(0, "--force", "--grace", "2s", nsA+"/w3b34")
	r.wantGone("paused w3b34", identities(paused))
	r.wantAlive("kill of w3b34", bystanders)
	if !waitUntil(10*time.Second, func() bool {
		return !strings.Contains(ctr(nsA, "task", "ls"), "RUNNING\n") || !strings.Contains(ctr(nsA, "task", "ls"), "w3b34 ")
	}) {
		r.t.Errorf("containerd still runs w3b34 after the kill:\n%s", ctr(nsA, "task", "ls"))
	}

	// Graceful kill of team A's web, with its SIGTERM-ignoring escaped
	// child (the shim's SIGTERM takes the container's pid namespace
	// down); team B's web stays.
	a = r.mustSandbox("containerd:"+nsA+"/web", 3)
	r.kill(0, "--force", "--grace", "1s", nsA+"/web")
	r.wantGone("team A web", identities(a))
	r.wantAlive("kill of team A web", identities(b))

	// SIGKILL containerd: B's shim loses its supervisor (orphan); after a
	// restart it has it again.
	daemon.crash()
	waitUntil(10*time.Second, func() bool {
		sb := r.sandbox("containerd:" + nsB + "/web")
		return sb != nil && hasBadge(sb, model.BadgeOrphan)
	})
	if sb := r.sandbox("containerd:" + nsB + "/web"); sb == nil || !hasBadge(sb, model.BadgeOrphan) {
		r.t.Errorf("containerd SIGKILLed: team B web %+v, want the orphan badge", sb)
	}
	daemon = start()
	waitUntil(20*time.Second, func() bool {
		sb := r.sandbox("containerd:" + nsB + "/web")
		return sb != nil && !hasBadge(sb, model.BadgeOrphan)
	})
	if sb := r.sandbox("containerd:" + nsB + "/web"); sb == nil || hasBadge(sb, model.BadgeOrphan) {
		r.t.Errorf("containerd restarted: team B web %+v, want no orphan badge", sb)
	}

	// A shim crashed while containerd is down: its container lives on in
	// /<ns>/<id>, named by nothing but that cgroup.
	b = r.mustSandbox("containerd:"+nsB+"/web", 2)
	daemon.crash()
	if err := syscall.Kill(b.RootPID, syscall.SIGKILL); err != nil {
		r.t.Fatalf("SIGKILL shim %d: %v", b.RootPID, err)
	}
	var orphan *model.SandboxJSON
	waitUntil(10*time.Second, func() bool {
		orphan = r.sandbox("containerd:" + nsB + "/web")
		return orphan != nil && orphan.CgroupOnly
	})
	if orphan == nil || !orphan.CgroupOnly || !hasBadge(orphan, model.BadgeOrphan) || orphan.Cgroup != "/"+nsB+"/web" ||
		!strings.Contains(orphan.Supervisor, "root and supervisor gone") {
		r.t.Fatalf("crashed shim: %+v", orphan)
	}
	r.kill(0, "--force", "--grace", "0", nsB+"/web")
	r.wantGone("crashed shim's container", identities(orphan))
	daemon = start()
	if !waitUntil(20*time.Second, func() bool { return !strings.Contains(ctr(nsB, "task", "ls"), "RUNNING") }) {
		r.t.Errorf("restarted containerd still runs team B web:\n%s", ctr(nsB, "task", "ls"))
	}
	_ = daemon
}

// hollowShim starts a container in ns and SIGKILLs its one process from
// outside containerd, as an OOM kill or a crash would: the shim stays,
// holding the stopped task for containerd, with nothing left to run. The
// sandbox is badged hollow once the shim is model.HollowAfter old, with
// the shim named as the evidence, and not before its workload is gone;
// removing the task then ends the shim.
func (r *rt) hollowShim(ns string, run func(ns, id, script string), ctr func(ns string, args ...string) string) {
	run(ns, "hollow", `exec sleep 100006`)
	sb := r.mustSandbox("containerd:"+ns+"/hollow", 2)
	workload := 0
	var shimStart time.Time
	for _, p := range sb.Processes {
		if p.PID != sb.RootPID && slices.Equal(p.Argv, []string{"sleep", "100006"}) {
			workload = p.PID
		}
		if p.PID == sb.RootPID {
			shimStart = p.StartTime
		}
	}
	if workload == 0 {
		r.t.Fatalf("no workload process in %+v", sb.Processes)
	}
	// The badges are judged by what `list --json` runs: the model's
	// Build alone does not.
	listed := func() *model.SandboxJSON { return findKey(listJSON(r.t), "containerd:"+ns+"/hollow") }
	// Old enough to be hollow, but with its workload: not hollow.
	time.Sleep(time.Until(shimStart.Add(model.HollowAfter + time.Second)))
	if got := listed(); got == nil || hasBadge(got, model.BadgeHollow) {
		r.t.Fatalf("list --json of a running container: %+v", got)
	}
	if err := syscall.Kill(workload, syscall.SIGKILL); err != nil {
		r.t.Fatalf("SIGKILL the container's process %d: %v", workload, err)
	}
	var got *model.SandboxJSON
	waitUntil(model.HollowAfter+20*time.Second, func() bool {
		got = listed()
		return got != nil && hasBadge(got, model.BadgeHollow)
	})
	if got == nil || !hasBadge(got, model.BadgeHollow) || got.Trouble == nil ||
		!strings.Contains(got.Trouble.Hollow, fmt.Sprintf("pid %d is alive", sb.RootPID)) || len(got.Processes) != 1 {
		r.t.Fatalf("the shim of a container killed under it: %+v", got)
	}
	// containerd lets the shim go once the stopped task is removed.
	ctr(ns, "task", "rm", "-f", "hollow")
	ctr(ns, "container", "rm", "hollow")
	ids := identities(got)
	waitUntil(10*time.Second, func() bool { return !slices.ContainsFunc(ids, alive) })
	r.wantGone("the hollow shim, its task removed", ids)
}
