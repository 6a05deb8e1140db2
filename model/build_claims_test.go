package model

import (
	"slices"
	"strings"
	"testing"
)

// TestImpersonation: a process inside sandbox A that dresses as another
// sandbox's shim, or puts another's ID in its argv, is A's: cgroup and
// tree evidence outrank what it says, its claim shows as a conflict, and
// no sandbox is folded into another or robbed of its processes.
func TestImpersonation(t *testing.T) {
	rules := Effective(nil, true)
	const (
		a  = "aaaaaaaa1111aaaa1111aaaa1111aaaa1111aaaa1111aaaa1111aaaa1111aaaa"
		b  = "bbbbbbbb2222bbbb2222bbbb2222bbbb2222bbbb2222bbbb2222bbbb2222bbbb"
		a2 = "cccccccc3333cccc3333cccc3333cccc3333cccc3333cccc3333cccc3333cccc"
		e  = "dddddddd4444dddd4444dddd4444dddd4444dddd4444dddd4444dddd4444dddd"
	)
	shim := func(id string) string {
		return "/usr/bin/containerd-shim-runc-v2 -namespace moby -id " + id + " -address /run/containerd/containerd.sock"
	}
	t.Run("a shim's name and B's ID inside A's cgroup", func(t *testing.T) {
		v := Build(snap(
			pr(100, 1, "/usr/bin/containerd --config /etc/containerd/config.toml", cgroup("/system.slice/containerd.service")),
			pr(200, 1, shim(a), cgroup("/system.slice/containerd.service")),
			pr(201, 200, "nginx: master", cgroup("/system.slice/docker-"+a+".scope")),
			pr(202, 201, "nginx: worker", cgroup("/system.slice/docker-"+a+".scope")),
			// The impostor: an exec of a binary named like a shim.
			pr(203, 201, shim(b), cgroup("/system.slice/docker-"+a+".scope")),
		), rules, nil)
		sa := one(t, v, a)
		if got := len(sa.Members); got != 4 || members(sa)[203] == nil {
			t.Errorf("A has %d members %v; want its shim, nginx master and worker, and the impostor", got, members(sa))
		}
		for _, sb := range v.Sandboxes {
			if slices.Contains(sb.Aliases, a) {
				t.Errorf("A was folded into %s as an alias", sb.Key())
			}
			if sb != sa && members(sb)[201] != nil {
				t.Errorf("A's processes are in %s", sb.Key())
			}
		}
		if len(sa.Conflicts) == 0 && !slices.ContainsFunc(v.Sandboxes, func(sb *Sandbox) bool { return sb.ID == b && len(sb.Conflicts) > 0 }) {
			t.Error("the claim of B is nowhere shown as a conflict")
		}
	})
	t.Run("a claim of E inside A2 takes nothing of E", func(t *testing.T) {
		v := Build(snap(
			pr(100, 1, "/usr/bin/containerd", cgroup("/system.slice/containerd.service")),
			pr(300, 1, shim(a2), cgroup("/system.slice/containerd.service")),
			pr(301, 300, "app", cgroup("/system.slice/docker-"+a2+".scope")),
			pr(302, 301, shim(e), cgroup("/system.slice/docker-"+a2+".scope")),
			pr(303, 302, "child-of-impostor", cgroup("/system.slice/docker-"+a2+".scope")),
			pr(400, 1, shim(e), cgroup("/system.slice/containerd.service")),
			pr(401, 400, "e-app", cgroup("/system.slice/docker-"+e+".scope")),
		), rules, nil)
		sa2, se := one(t, v, a2), one(t, v, e)
		for _, pid := range []int{301, 302, 303} {
			if members(sa2)[pid] == nil {
				t.Errorf("pid %d is not in A2: a kill of A2 would leave it", pid)
			}
		}
		for _, pid := range []int{302, 303} {
			if members(se)[pid] != nil {
				t.Errorf("pid %d (A2's) is in E: a kill of E would signal it", pid)
			}
		}
		for _, pid := range []int{400, 401} {
			if members(sa2)[pid] != nil {
				t.Errorf("pid %d (E's) is in A2: a kill of A2 would signal it", pid)
			}
		}
		if len(sa2.Conflicts) == 0 || len(se.Conflicts) == 0 || !strings.Contains(sa2.ConflictText(), "claims docker:moby/"+e) {
			t.Errorf("conflicts A2 %q, E %q: want the claim shown on both", sa2.Conflicts, se.Conflicts)
		}
		if se.Root == nil || se.Root.PID != 400 {
			t.Errorf("E's root %v, want its shim", se.Root)
		}
	})
	t.Run("a supervisor socket in an impostor's argv does not supervise", func(t *testing.T) {
		// B is an orphan (nothing listens on its -address); an impostor
		// inside A naming B and a live socket must not make it look
		// supervised.
		s := snap(
			pr(300, 1, shim(a2), cgroup("/system.slice/containerd.service")),
			pr(301, 300, "app", cgroup("/system.slice/docker-"+a2+".scope")),
			pr(302, 301, "/usr/bin/containerd-shim-runc-v2 -namespace moby -id "+e+" -address /run/live.sock", cgroup("/system.slice/docker-"+a2+".scope")),
			pr(400, 1, "/usr/bin/containerd-shim-runc-v2 -namespace moby -id "+e+" -address /run/dead.sock", cgroup("/system.slice/containerd.service")),
			pr(401, 400, "e-app", cgroup("/system.slice/docker-"+e+".scope")),
		)
		s.Listeners["/run/live.sock"] = true
		v := Build(s, rules, nil)
		if se := one(t, v, e); se.Supervised || !slices.Contains(se.Badges, BadgeOrphan) {
			t.Errorf("E supervised %v badges %v (%s): the impostor's socket made it look supervised", se.Supervised, se.Badges, se.SupervisorNote)
		}
	})
}
