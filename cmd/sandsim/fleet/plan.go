package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// plan is a spec turned into process trees, directories and cgroups, ready
// for the owner to start.
type plan struct {
	// top lists the nodes the owner starts itself: supervisors, detached
	// sandbox roots and bystanders.
	top         []*node
	boxes       []*boxPlan
	supervisors []*node
	bystanders  []*node
	// members maps the key of every process that reports to its role.
	members map[string]string
}

// boxPlan is one sandbox being built.
type boxPlan struct {
	m    Sandbox
	root *node
	// main is the runtime's workload process, where behaviours go.
	main *node
	// parent starts root; nil means the owner does (PPID 1 on a real host).
	parent *node
	sup    *node
	// leafParent and leafCgroups say where bulk leaves go: in the container
	// runtimes they are container processes (children of the shim, in the
	// container's cgroup).
	leafParent  *node
	leafCgroups []string
}

// hostEnv is what the builder needs to know about the host.
type hostEnv struct {
	base    string // temp directory for every file the fleet makes
	bin     string // symlinks to the sleep binary, one per leaf name
	sleep   string
	v2, v1  *hierarchy // nil when unusable
	rootful bool
}

// builder turns a spec into a plan.
type builder struct {
	env hostEnv
	ids *idGen
	p   *plan
	seq int
	// sups holds the supervisors by key; sandboxes with one key share one.
	sups  map[string]*node
	links map[string]string
	dirs  map[string]bool
	// cube and netns number Cube's cgroup pool and vm0's network
	// namespaces across the fleet.
	cube, netns int
	// shared cgroups (containerd.service) by relative path.
	shared map[string][]string
}

// maxSocketPath is the longest unix socket path: sun_path holds 108 bytes
// including the NUL (unix(7)).
const maxSocketPath = 107

// buildPlan builds every sandbox, supervisor and bystander of spec.
func buildPlan(spec Spec, env hostEnv) (*plan, error) {
	b := &builder{
		env:    env,
		ids:    newIDGen(spec.Seed),
		p:      &plan{members: map[string]string{}},
		sups:   map[string]*node{},
		links:  map[string]string{},
		dirs:   map[string]bool{},
		shared: map[string][]string{},
	}
	byName := map[string]*boxPlan{}
	var roots []*node
	for _, sb := range spec.withDefaults().Sandboxes {
		if sb.ID == "" {
			sb.ID = b.ids.sandboxID(sb.Runtime)
		}
		bp := &boxPlan{m: Sandbox{Name: sb.Name, ID: sb.ID, Runtime: sb.Runtime, Spec: sb}}
		if err := b.build(bp); err != nil {
			return nil, fmt.Errorf("sandbox %s: %w", sb.Name, err)
		}
		if err := b.behave(bp); err != nil {
			return nil, fmt.Errorf("sandbox %s: %w", sb.Name, err)
		}
		if bp.parent != nil {
			bp.parent.Children = append(bp.parent.Children, bp.root)
		} else {
			roots = append(roots, bp.root)
		}
		b.p.boxes = append(b.p.boxes, bp)
		byName[sb.Name] = bp
	}
	// Supervisors first, so their sockets listen before the shims start.
	b.p.top = append(append(b.p.top, b.p.supervisors...), roots...)
	for _, by := range spec.Bystanders {
		n := b.node(by.Role, by.Argv...)
		if bp := byName[by.CgroupOf]; bp != nil {
			n.Cgroups = b.cgroupsOf(bp.root, bp.parent)
		}
		if bp := byName[by.SiblingOf]; bp != nil && bp.parent != nil {
			bp.parent.Children = append(bp.parent.Children, n)
		} else {
			b.p.top = append(b.p.top, n)
		}
		b.p.bystanders = append(b.p.bystanders, n)
	}
	b.register()
	return b.p, nil
}

// build dispatches to the runtime's builder.
func (b *builder) build(bp *boxPlan) error {
	switch bp.m.Runtime {
	case VM0:
		return b.vm0(bp)
	case Jailer:
		return b.jailer(bp)
	case Boxlite:
		return b.boxlite(bp)
	case Cube:
		return b.cubeShim(bp)
	case Containerd, Docker, Kubernetes, Kata, GVisor, Cloudflare:
		return b.containerdShim(bp)
	case Machine:
		return b.machine(bp)
	case Podman:
		return b.podman(bp)
	}
	return fmt.Errorf("unknown runtime %q", bp.m.Runtime)
}

// behave attaches the spec's behaviours to the target member.
func (b *builder) behave(bp *boxPlan) error {
	sb := bp.m.Spec
	target := bp.main
	if sb.On != "" {
		target = findRole(bp.root, sb.On)
		if target == nil {
			return fmt.Errorf("no member with role %q", sb.On)
		}
	}
	target.IgnoreTERM = target.IgnoreTERM || sb.IgnoreTERM
	for range sb.Zombies {
		// Short-lived helpers such as `sh -c …` are the usual zombies.
		z, err := b.leaf(RoleZombie, "sh", "0")
		if err != nil {
			return err
		}
		target.Zombies = append(target.Zombies, z)
	}
	if sb.Escape {
		target.Escape = &node{
			Key:    b.key(),
			Role:   RoleEscaped,
			Argv:   target.Argv,
			Comm:   target.Comm,
			Setsid: true,
		}
	}
	if sb.Forker {
		path, err := b.link("sh")
		if err != nil {
			return err
		}
		target.Fork = &forkSpec{Path: path, Argv: []string{"sh", "0.1"}, Every: 20 * time.Millisecond, Max: 4}
	}
	parent, cgroups := bp.leafParent, bp.leafCgroups
	if parent == nil {
		parent = target
	}
	for range sb.Leaves {
		l, err := b.leaf(RoleLeaf, "worker", "infinity")
		if err != nil {
			return err
		}
		l.Cgroups = cgroups
		parent.Leaves = append(parent.Leaves, l)
	}
	return nil
}

// register records every process that will report: every node reachable
// from the top (a node that execs another reports as that one), and every
// leaf and zombie.
func (b *builder) register() {
	var walk func(n *node)
	walk = func(n *node) {
		r := n.reporter()
		b.p.members[r.Key] = r.Role
		for _, l := range append(slices.Clone(r.Leaves), r.Zombies...) {
			b.p.members[l.Key] = l.Role
		}
		for _, c := range r.Children {
			walk(c)
		}
		if r.Escape != nil {
			walk(r.Escape)
		}
	}
	for _, n := range b.p.top {
		walk(n)
	}
}

// findRole returns the first process with the role in pre-order. A node
// that execs another is that other node: behaviours set on the node before
// its exec would never run.
func findRole(n *node, role string) *node {
	r := n.reporter()
	if r.Role == role {
		return r
	}
	for _, c := range r.Children {
		if f := findRole(c, role); f != nil {
			return f
		}
	}
	return nil
}

func (b *builder) key() string {
	b.seq++
	return fmt.Sprintf("n%d", b.seq)
}

// node makes a node with a fresh key.
func (b *builder) node(role string, argv ...string) *node {
	return &node{Key: b.key(), Role: role, Argv: argv}
}

// link returns the path of a symlink named name that points to the sleep
// binary, making it on first use.
func (b *builder) link(name string) (string, error) {
	if p, ok := b.links[name]; ok {
		return p, nil
	}
	p := filepath.Join(b.env.bin, name)
	if err := os.Symlink(b.env.sleep, p); err != nil {
		return "", fmt.Errorf("link leaf %s: %w", name, err)
	}
	b.links[name] = p
	return p, nil
}

// leaf makes a sleep-backed leaf with argv [name, args...].
func (b *builder) leaf(role, name string, args ...string) (*leaf, error) {
	path, err := b.link(name)
	if err != nil {
		return nil, err
	}
	return &leaf{Key: b.key(), Role: role, Path: path, Argv: append([]string{name}, args...)}, nil
}

// mkdir creates a directory below the base (slash-separated rel) and
// returns its path. mine records it in the sandbox's Dirs.
func (b *builder) mkdir(bp *boxPlan, rel string) (string, error) {
	dir := filepath.Join(b.env.base, filepath.FromSlash(rel))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("sandbox directory: %w", err)
	}
	if bp != nil && !b.dirs[dir] {
		bp.m.Dirs = append(bp.m.Dirs, dir)
	}
	b.dirs[dir] = true
	return dir, nil
}

// socket returns a unix socket path below the base.
func (b *builder) socket(rel string) (string, error) {
	p := filepath.Join(b.env.base, filepath.FromSlash(rel))
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("socket path %s is longer than %d bytes; use a shorter Options.Dir", p, maxSocketPath)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("socket directory: %w", err)
	}
	return p, nil
}

// dedicatedCgroup makes the sandbox's own cgroup (rel below the fleet's
// top directory) and returns the directories a member joins to be in it.
// Without a usable hierarchy it returns nil and notes why.
func (b *builder) dedicatedCgroup(bp *boxPlan, rel string) ([]string, error) {
	v2, v1, err := b.cgroupPair(bp, rel)
	if err != nil {
		return nil, err
	}
	if v2 != "" {
		bp.m.Cgroup, bp.m.CgroupDir = b.env.v2.path(v2), v2
	} else {
		bp.m.Notes = append(bp.m.Notes, "no usable cgroup v2 hierarchy: the sandbox has no cgroup of its own")
	}
	if v1 != "" {
		bp.m.Freezer, bp.m.FreezerDir = b.env.v1.path(v1), v1
	} else if bp.m.Spec.Pause == PauseFreezerV1 {
		bp.m.Notes = append(bp.m.Notes, "no usable v1 freezer hierarchy")
	}
	return nonEmpty(v2, v1), nil
}

// boxCgroup makes a cgroup inside the sandbox's own (a container scope in a
// pod slice) and returns the directories to join.
func (b *builder) boxCgroup(bp *boxPlan, rel string) ([]string, error) {
	v2, v1, err := b.cgroupPair(bp, rel)
	return nonEmpty(v2, v1), err
}

// cgroupPair makes rel in the v2 hierarchy and, for a sandbox to be frozen
// through v1, in the v1 freezer hierarchy too.
func (b *builder) cgroupPair(bp *boxPlan, rel string) (v2, v1 string, err error) {
	if h := b.env.v2; h != nil {
		if v2, err = h.mkdir(rel); err != nil {
			return "", "", err
		}
	}
	if h := b.env.v1; h != nil && bp.m.Spec.Pause == PauseFreezerV1 {
		if v1, err = h.mkdir(rel); err != nil {
			return "", "", err
		}
	}
	return v2, v1, nil
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// sharedCgroup makes (once) a cgroup that is not any sandbox's own, such as
// system.slice/containerd.service, which holds containerd and its shims.
func (b *builder) sharedCgroup(rel string) ([]string, error) {
	if dirs, ok := b.shared[rel]; ok {
		return dirs, nil
	}
	var dirs []string
	if h := b.env.v2; h != nil {
		dir, err := h.mkdir(rel)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, dir)
	}
	b.shared[rel] = dirs
	return dirs, nil
}

// cgroupsOf returns the cgroup directories n ends up in: its own, or the
// nearest ancestor's (parent is n's parent; nil is the owner, whose
// cgroup a bystander inherits anyway).
func (b *builder) cgroupsOf(n, parent *node) []string {
	if len(n.Cgroups) > 0 {
		return n.Cgroups
	}
	if parent != nil {
		return parent.Cgroups
	}
	return nil
}

// supervisor returns the supervisor with key for bp, creating it with mk.
// An orphan-to-be gets its own instance, so killing it orphans no one else.
func (b *builder) supervisor(bp *boxPlan, key string, mk func(key string) (*node, error)) (*node, error) {
	if bp.m.Spec.Supervisor != "" {
		key = bp.m.Spec.Supervisor
	}
	if bp.m.Spec.Orphan {
		key = key + "-" + bp.m.Name
	}
	s := b.sups[key]
	if s == nil {
		var err error
		if s, err = mk(key); err != nil {
			return nil, err
		}
		b.sups[key] = s
		b.p.supervisors = append(b.p.supervisors, s)
	}
	bp.sup = s
	return s, nil
}
