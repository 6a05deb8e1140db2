package model

// mergeNested folds a sandbox into another with the same ID when one of
// its processes is a child of the other's member and every one of its
// processes lives in a cgroup that names the ID: one runtime running under
// another for the same container, inside that container's cgroup. gVisor as a Docker runtime is the
// case: Docker's shim (containerd-shim-runc-v2 -namespace moby -id <id>,
// the docker rule) runs runsc, whose runsc-sandbox and runsc-gofer (the
// gvisor rules, named by the same container ID on their argv) are its
// children, in the same docker-<id>.scope; seen in the Debian 12 test host
// with docker.io 20.10.24 and runsc 20221219. One container, one sandbox:
// the outer runtime's, which owns its cgroup and is the one its operator
// names. systemd-nspawn registered with machined is another: nspawn:m1
// (systemd-nspawn -M m1, in its caller's cgroup or a service) forks the
// payload, which machined's machine.slice/machine-m1.scope/payload names
// machine:m1. One machine, one sandbox: nspawn's.
func (w *build) mergeNested() {
	byID := make(map[string][]*Sandbox, len(w.byID))
	nested := false
	for _, sb := range w.sorted() {
		byID[sb.ID] = append(byID[sb.ID], sb)
		nested = nested || len(byID[sb.ID]) > 1
	}
	if !nested {
		return
	}
	for _, inner := range w.sorted() {
		same := byID[inner.ID]
		if len(same) < 2 || w.byID[inner.Key()] != inner {
			continue
		}
		if outer := w.parentSandbox(inner); outer != nil && outer.ID == inner.ID && w.inOwnCgroups(inner) {
			w.merge(outer, inner, false)
			w.nestedMerged = true
		}
	}
}

// parentSandbox returns the sandbox that owns the parent of one of sb's
// processes whose parent is not sb's, or nil.
func (w *build) parentSandbox(sb *Sandbox) *Sandbox {
	for _, p := range w.procs[sb] {
		i := w.ix.of(p.PPID)
		if i < 0 {
			continue
		}
		if o := w.owner[i]; o != nil && o != sb {
			return o
		}
	}
	return nil
}

// inOwnCgroups reports whether every process of sb lives in a cgroup that
// names sb: its ID in the path, or a layout of its rules (a machine named
// m1, too short to count as a token, in machine.slice/machine-m1.scope).
func (w *build) inOwnCgroups(sb *Sandbox) bool {
	for _, p := range w.procs[sb] {
		if w.claims(sb, p.Cgroup) < claimByName {
			return false
		}
	}
	return true
}
