package model

import (
	"cmp"
	"regexp"
	"slices"
	"strings"

	"github.com/sandtop/sandtop/proc"
)

// Container is one container inside a sandbox that groups several: a
// Kubernetes pod (its pause container and app containers), a podman pod.
// Its cgroup is a child of the sandbox's dedicated cgroup named by the
// container's ID, so that the container alone can be torn down.
type Container struct {
	ID string
	// Cgroup is the container's own cgroup v2 path, beneath the sandbox's.
	Cgroup  string
	Members []*Member
}

// containerCgroup is a container's cgroup directly beneath its pod's:
// cri-containerd-<id>.scope (containerd's CRI plugin with the systemd
// driver), crio-<id>.scope (cri-o), docker-<id>.scope (cri-dockerd),
// libpod-<id>.scope (a podman pod), or the bare <id> the cgroupfs driver
// uses. cri-o's crio-conmon-<id>.scope is the container's monitor, not
// the container, and does not match. Sources: containerd/containerd
// internal/cri/server/podsandbox/helpers_linux.go and
// internal/cri/opts/spec_linux.go (cgroupsPath "<pod slice>:cri-containerd:<id>"),
// cri-o/cri-o internal/config/cgmgr/systemd.go (crio-<id>.scope,
// crio-conmon-<id>.scope), kubernetes/kubernetes pkg/kubelet/cm
// (cgroupfs: /kubepods/<qos>/pod<uid>/<id>); seen in the Debian 12 test
// host with containerd 1.6.20 (ctr run --runc-systemd-cgroup).
var containerCgroup = regexp.MustCompile(`^(?:cri-containerd-|crio-|docker-|libpod-)?(?P<id>[0-9a-f]{64})(?:\.scope)?$`)

// Containers lists the containers inside the sandbox, by ID: the members
// whose cgroup lies in a container's cgroup directly beneath the
// sandbox's dedicated one; nil when there are none (a sandbox without a
// dedicated cgroup, or one that is itself a container's). Computed from
// Members and Cgroup on each call.
func (s *Sandbox) Containers() []Container {
	if s.Cgroup == "" {
		return nil
	}
	prefix := strings.TrimSuffix(s.Cgroup, "/") + "/"
	var out []Container
	for _, m := range s.Members {
		rest, ok := strings.CutPrefix(m.Cgroup, prefix)
		if !ok {
			continue
		}
		leaf, _, _ := strings.Cut(rest, "/")
		match := containerCgroup.FindStringSubmatch(leaf)
		if match == nil {
			continue
		}
		id := match[1]
		i := slices.IndexFunc(out, func(c Container) bool { return c.ID == id })
		if i < 0 {
			out = append(out, Container{ID: id, Cgroup: prefix + leaf})
			i = len(out) - 1
		}
		out[i].Members = append(out[i].Members, m)
	}
	slices.SortFunc(out, func(a, b Container) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// containerKeySep joins a pod's Key and a container's ID into the
// container's Key: no sandbox Key holds it (IDs are alphanumerics and
// -_.:/).
const containerKeySep = "#"

// containerSandbox is one container of pod as a sandbox of its own, for a
// teardown that takes that container alone: its members, its cgroup (the
// container's own, dedicated by layout), the pod's supervision (the pod
// and its shim stay). Pod names the pod it is part of.
func (pod *Sandbox) containerSandbox(c Container) *Sandbox {
	return &Sandbox{
		ID:             c.ID,
		Runtime:        pod.Runtime,
		Namespace:      pod.Namespace,
		Rule:           pod.Rule,
		MatchedBy:      pod.MatchedBy,
		Vars:           pod.Vars,
		varsShared:     true,
		Root:           c.Members[0],
		Members:        c.Members,
		Supervisor:     pod.Supervisor,
		Supervised:     true,
		SupervisorNote: "a container of " + pod.Runtime + " " + pod.Name() + ", which stays, with its other containers",
		Cgroup:         c.Cgroup,
		Pod:            pod,
		key:            pod.Key() + containerKeySep + c.ID,
		idx:            -1,
	}
}

// container returns the container of the view's pods with this Key (see
// containerSandbox), or nil.
func (v *View) container(key string) *Sandbox {
	podKey, id, ok := strings.Cut(key, containerKeySep)
	if !ok {
		return nil
	}
	pod := v.byKey(podKey)
	if pod == nil {
		return nil
	}
	for _, c := range pod.Containers() {
		if c.ID == id {
			return pod.containerSandbox(c)
		}
	}
	return nil
}

// containersNamed lists, as sandboxes of their own, the containers whose
// ID is arg (exact) or starts with it (prefix), leaving out a container
// whose ID its pod also answers to (a pod's pause container names the
// pod).
func (v *View) containersNamed(arg string, prefix bool) []*Sandbox {
	var hits []*Sandbox
	for _, pod := range v.Sandboxes {
		for _, c := range pod.Containers() {
			if c.ID == pod.ID || slices.Contains(pod.Aliases, c.ID) {
				continue
			}
			if c.ID == arg || (prefix && strings.HasPrefix(c.ID, arg)) {
				hits = append(hits, pod.containerSandbox(c))
			}
		}
	}
	return hits
}

// Holds reports whether the process with this identity is one of the
// sandbox's members.
func (s *Sandbox) Holds(id proc.Identity) bool {
	return slices.ContainsFunc(s.Members, func(m *Member) bool { return m.PID == id.PID && m.Start == id.Start })
}
