package teardown

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
)

// On a systemd host a Docker container's shim stays in containerd.service,
// in containerd's session (containerd starts shims with a process group of
// their own, not a session), and the container's init in its scope. Once
// the container is killed, containerd runs the shim binary again there
// (`… delete`) to clean up: a process in the cgroup the sandbox's shim
// occupied, started after its root, in the shim's session. That session is
// containerd's, older than the sandbox: the helper is no suspect. A process
// that kept the container's own session and was re-parented away is one.
func TestSuspectsLeaveTheDaemonsSession(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	const svc = "/system.slice/containerd.service"
	p, sid, start, cg := modeltest.Proc, func(s int) modeltest.Opt { return func(p *proc.Process) { p.SID = s } }, modeltest.Start, modeltest.Cgroup
	containerd := p(100, 1, "/usr/bin/containerd", start(10), cg(svc))
	dockerd := p(110, 1, "/usr/sbin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock", start(11), cg("/system.slice/docker.service"))
	shim := p(200, 1, "/usr/bin/containerd-shim-runc-v2 -namespace moby -id "+id+" -address /run/containerd/containerd.sock", start(20), cg(svc), sid(100))
	init := p(300, 200, "sleep 100000", start(30), cg("/system.slice/docker-"+id+".scope"))
	plan := modeltest.Snapshot(proc.Snapshot{}, p(1, 0, "/sbin/init", start(1)), containerd, dockerd, shim, init)
	v := model.Build(plan, model.Effective(nil, true), nil)
	sb := v.SandboxOf(init.ID())
	if sb == nil || !sb.Holds(shim.ID()) {
		t.Fatalf("the fixture's container is not one sandbox with its shim: %+v", v.Sandboxes)
	}
	sc := newSuspectScope(v, sb)

	helper := p(400, 100, "/usr/bin/containerd-shim-runc-v2 -namespace moby -address /run/containerd/containerd.sock delete", start(40), cg(svc), sid(100), modeltest.PGID(100))
	escaped := p(500, 1, "sh -c sleep", start(41), cg(svc), sid(300), modeltest.PGID(300))
	after := modeltest.Snapshot(proc.Snapshot{}, p(1, 0, "/sbin/init", start(1)), containerd, dockerd, helper, escaped)
	got := sc.find(after, nil, func(proc.Identity) bool { return false }, nil, false)
	var pids []int
	for _, s := range got {
		pids = append(pids, s.PID)
		if s.PID == 500 && !strings.Contains(s.Why(), "same session as the sandbox") {
			t.Errorf("the escaped process's evidence: %s", s.Why())
		}
	}
	if len(pids) != 1 || pids[0] != 500 {
		t.Errorf("suspects %v, want only 500 (the escape), never 400 (containerd's delete helper in its own session)", pids)
	}
}

// A root started in a session of its own (systemd-nspawn run with setsid
// by a test suite, a subreaper) leaves every process it forks in its
// session, or in one of their own: a process born during the teardown in
// the session of the root's parent is that parent's new child, never one
// of the tree's re-parented, since a session is only inherited or new.
// Only when the root shares its parent's session does a birth there stay
// ambiguous, and it is named.
func TestSuspectsBornInTheParentsSession(t *testing.T) {
	const svc = "/system.slice/suite.service"
	const scope = `/machine.slice/machine-st\x2ddirect.scope/payload`
	p, sid, start, cg := modeltest.Proc, func(s int) modeltest.Opt { return func(p *proc.Process) { p.SID = s } }, modeltest.Start, modeltest.Cgroup
	for _, tc := range []struct {
		name    string
		rootSID int
		want    []int
	}{
		{"root in a session of its own", 1726, []int{1760}},
		{"root in its parent's session", 400, []int{1752, 1760}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			suite := p(403, 1, "/guest.test", start(10), cg(svc), sid(400))
			nspawn := p(1726, 403, "systemd-nspawn --quiet -D /tmp/st-direct -M st-direct /bin/sleep 100000", start(20), cg(svc), sid(tc.rootSID))
			payload := p(1736, 1726, "/bin/sleep 100000", start(21), cg(scope), sid(1736), modeltest.NSpid(1736, 1))
			plan := modeltest.Snapshot(proc.Snapshot{}, p(1, 0, "/sbin/init", start(1)), suite, nspawn, payload)
			v := model.Build(plan, model.Effective(nil, true), nil)
			sb := v.SandboxOf(nspawn.ID())
			if sb == nil || !sb.Holds(payload.ID()) {
				t.Fatalf("the fixture's machine is not one sandbox: %+v", v.Sandboxes)
			}
			sc := newSuspectScope(v, sb)
			// nspawn and its payload exited of SIGTERM (lost); the suite
			// started ctr meanwhile, and a child nspawn forked was
			// re-parented to the suite.
			ctr := p(1752, 403, "ctr -n k8s.io tasks ls", start(30), cg(svc), sid(400))
			reparented := p(1760, 403, "sleep 5", start(31), cg(svc), sid(tc.rootSID))
			after := modeltest.Snapshot(proc.Snapshot{}, p(1, 0, "/sbin/init", start(1)), suite, ctr, reparented)
			var pids []int
			for _, s := range sc.find(after, nil, func(proc.Identity) bool { return false }, nil, true) {
				pids = append(pids, s.PID)
			}
			if !slices.Equal(pids, tc.want) {
				t.Errorf("suspects %v, want %v", pids, tc.want)
			}
		})
	}
}
