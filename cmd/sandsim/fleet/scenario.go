package fleet

import (
	"fmt"
	"strconv"
	"strings"
)

// Scenario returns a named spec: "demo", "seeds", "bulk:N" or
// "bulk-orphans:N".
func Scenario(name string) (Spec, error) {
	switch name {
	case "demo":
		return Demo(), nil
	case "seeds":
		return Seeds(), nil
	}
	for prefix, spec := range map[string]func(int) Spec{"bulk:": Bulk, "bulk-orphans:": BulkOrphans} {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 {
			return Spec{}, fmt.Errorf("scenario %q: want %sN with N >= 1", name, prefix)
		}
		return spec(n), nil
	}
	return Spec{}, fmt.Errorf("unknown scenario %q (want demo, seeds, bulk:N or bulk-orphans:N)", name)
}

// Demo has one sandbox for every case sandtop must show: each runtime,
// healthy and orphaned supervisors, every way of being paused, zombies, a
// SIGTERM-ignorer, a fork loop, an escaped double fork and bystanders.
func Demo() Spec {
	return Spec{
		Scenario: "demo",
		Sandboxes: []SandboxSpec{
			{Name: "vm0-healthy", Runtime: VM0},
			{Name: "vm0-orphan", Runtime: VM0, Orphan: true},
			{Name: "fc-jailer", Runtime: Jailer},
			{Name: "boxlite-detached", Runtime: Boxlite, Detached: true},
			{Name: "boxlite-attached", Runtime: Boxlite},
			{Name: "cube-paused", Runtime: Cube, Pause: PauseFreeze},
			{Name: "cube-paused-v1", Runtime: Cube, Pause: PauseFreezerV1},
			{Name: "cube-orphan", Runtime: Cube, Orphan: true},
			{Name: "containerd-web", Runtime: Containerd},
			{Name: "containerd-zombies", Runtime: Containerd, Zombies: 3},
			{Name: "containerd-stubborn", Runtime: Containerd, IgnoreTERM: true},
			{Name: "docker-forker", Runtime: Docker, Forker: true},
			{Name: "docker-escape", Runtime: Docker, Escape: true},
			{Name: "docker-stopped", Runtime: Docker, Pause: PauseStop},
			{Name: "k8s-pod", Runtime: Kubernetes},
			{Name: "kata", Runtime: Kata},
			{Name: "gvisor", Runtime: GVisor},
			{Name: "libvirt-guest", Runtime: Machine},
			{Name: "cloudflare-session", Runtime: Cloudflare},
			{Name: "podman-web", Runtime: Podman},
			{Name: "podman-paused", Runtime: Podman, Pause: PauseFreeze},
		},
		Bystanders: []BystanderSpec{
			{Role: "bystander-cgroup", Argv: []string{"ctr", "--namespace", "k8s.io", "events"}, CgroupOf: "containerd-web"},
			{Role: "bystander-sibling", Argv: []string{"node_exporter", "--web.listen-address=:9100"}, SiblingOf: "vm0-healthy"},
		},
	}
}

// Seeds has one sandbox per case of the bug reports sandtop was first
// built against: each shape that once fooled a teardown (numbered as in
// the comments below), kept so every later change meets them again.
func Seeds() Spec {
	return Spec{
		Scenario: "seeds",
		Sandboxes: []SandboxSpec{
			// 000: vm0 `runner kill`: managed (runner alive) and orphaned runs.
			{Name: "seed000-vm0-managed", Runtime: VM0},
			{Name: "seed000-vm0-orphan", Runtime: VM0, Orphan: true},
			// 001: Cloudflare process-tree kill: a 3-level session tree whose
			// deepest member ignores SIGTERM and leaves a zombie.
			{Name: "seed001-cloudflare-tree", Runtime: Cloudflare, On: "command-child", IgnoreTERM: true, Zombies: 1},
			// 002: a detached boxlite box: the inner pid-namespace tree
			// survives a kill of the outer bwrap.
			{Name: "seed002-boxlite-detached", Runtime: Boxlite, Detached: true},
			// 003: a paused (frozen) CubeSandbox sandbox.
			{Name: "seed003-cube-paused", Runtime: Cube, Pause: PauseFreeze},
			// 004: a box stranded by its dead owner (a test that panicked).
			{Name: "seed004-boxlite-stranded", Runtime: Boxlite, Orphan: true},
		},
	}
}

// Bulk spreads n processes over sandboxes of about ten: a container shim
// (the one Go process each) and its `sleep infinity` leaves, in the
// container's cgroup; Docker and containerd alternate. The shared
// containerd comes on top.
func Bulk(n int) Spec {
	const per = 10
	spec := Spec{Scenario: fmt.Sprintf("bulk:%d", n)}
	for i := 0; i*per < n; i++ {
		rt := Docker
		if i%2 == 1 {
			rt = Containerd
		}
		procs := min(per, n-i*per)
		spec.Sandboxes = append(spec.Sandboxes, SandboxSpec{
			Name:    fmt.Sprintf("bulk-%d", i+1),
			Runtime: rt,
			Bare:    true,
			Leaves:  procs - 1,
		})
	}
	return spec
}

// BulkOrphans is Bulk with every sandbox a containerd shim whose
// containerd is dead: each sandbox gets a containerd of its own, killed
// once the fleet is up, so n counts the shims and their leaves only.
func BulkOrphans(n int) Spec {
	spec := Bulk(n)
	spec.Scenario = fmt.Sprintf("bulk-orphans:%d", n)
	for i := range spec.Sandboxes {
		spec.Sandboxes[i].Runtime, spec.Sandboxes[i].Orphan = Containerd, true
	}
	return spec
}
