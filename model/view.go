package model

import (
	"cmp"
	"slices"
	"time"

	"github.com/sandtop/sandtop/proc"
)

// Badge is a condition an operator must see at a glance.
type Badge string

// The badges, in display order.
const (
	BadgeOrphan Badge = "orphan"
	BadgeZombie Badge = "zombie"
	BadgePaused Badge = "paused"
	// BadgeLeftover marks a sandbox with no process left that still holds
	// directories, sockets or cgroups (see Leftovers).
	BadgeLeftover Badge = "leftover"
	// BadgeOOM, BadgeStuck and BadgeHollow are a Watch's (see Trouble).
	BadgeOOM    Badge = "oom"
	BadgeStuck  Badge = "stuck"
	BadgeHollow Badge = "hollow"
)

// MarkEscaped marks a process that escaped its sandbox's tree (see
// Member.Escaped) where a process's state is shown. It is no sandbox
// badge: an escaped child says nothing of the sandbox's supervisor, so it
// is not in Badges, and never the orphan badge.
const MarkEscaped Badge = "escaped"

// Badges lists every badge, in display order: the header counts them, the
// filter language accepts them, and nothing else keeps a copy. Read-only.
var Badges = []Badge{BadgeOrphan, BadgeZombie, BadgePaused, BadgeLeftover, BadgeOOM, BadgeStuck, BadgeHollow}

// Via says why a process is in a sandbox (attribution rules 1–4).
type Via uint8

// Attribution reasons, in the order they are applied.
const (
	ViaRule     Via = iota + 1 // a rule matched the process itself
	ViaGroup                   // in the process group of a matched process
	ViaAncestor                // its nearest member ancestor is in the sandbox
	ViaCgroup                  // it lives in the sandbox's dedicated cgroup
	ViaSticky                  // it was in the sandbox in an earlier view and still lives
)

func (v Via) String() string {
	switch v {
	case ViaRule:
		return "rule"
	case ViaGroup:
		return "process group"
	case ViaAncestor:
		return "ancestor"
	case ViaCgroup:
		return "cgroup"
	case ViaSticky:
		return "sticky"
	}
	return "?"
}

// View is the host grouped into sandboxes: a pure function of a snapshot,
// the rules and the previous view.
type View struct {
	Time     time.Time
	Host     string
	Snapshot *proc.Snapshot
	// Sandboxes sorted by ID.
	Sandboxes []*Sandbox
	// Unattributed lists the user-space processes in no sandbox, by pid
	// (PID 1 and sandtop itself included; kernel threads excluded).
	Unattributed []*proc.Process

	// byID indexes Sandboxes by position, so that a refresh that changed
	// no attribution can share it with the last view (see Builder.reuse).
	byID map[string]int32
	// members holds the Member of each process of Snapshot, by position;
	// nil for a process in no sandbox. It stands in for a map by identity,
	// which cost five times as much (a tenth of a steady Builder's memory
	// at 10,000 processes), and the Builder keeps it to compare the next
	// snapshot with (see lastBuild.members): read-only.
	members []*Member
	// base is the view Leftovers.Apply added leftover sandboxes to (and
	// Watch.Apply judged): what the Builder built, and what it compares
	// the next snapshot with.
	base *View
	// resources holds each sandbox's figures by position, when a Watch
	// worked them out (see View.Resources).
	resources []*Resources
}

// Sandbox is one sandbox: a set of processes that share an identity, which
// is the runtime, the runtime's namespace (if it has one) and the ID. Two
// containerd namespaces can each hold a container "web", and two runtimes
// can happen to pick the same ID: those are different sandboxes.
type Sandbox struct {
	ID      string
	Runtime string
	// Namespace is the runtime's namespace (containerd's -namespace, the
	// first component of its /<ns>/<id> cgroup), "" when it has none.
	Namespace string
	// Aliases are other IDs folded into this sandbox (a pod's sandbox ID,
	// under its pod UID).
	Aliases []string
	// Rule is the rule that first recognised the sandbox; MatchedBy names
	// its matcher that captured the ID.
	Rule      *Rule
	MatchedBy string
	// Vars are the named captures of the first match ("id", "base", …).
	Vars map[string]string
	// Root is the oldest member whose parent is not a member; nil for a
	// sandbox with no process left (only Leftovers).
	Root *Member
	// Members in tree pre-order: the root's tree first (children by pid),
	// then any other top-level member (an escaped process) by pid.
	Members []*Member
	// Supervisor is the live supervisor process, when it is a process
	// sandtop can name; SupervisorNote says why the sandbox is or is not
	// an orphan.
	Supervisor     *proc.Process
	SupervisorNote string
	// Supervised is true when a live supervisor is known (an ancestor, or
	// a listener on its socket). An unsupervised sandbox is cleaned up by
	// whoever kills it; a supervised one is cleaned up by its supervisor.
	Supervised bool
	// Cgroup is the sandbox's dedicated cgroup v2 path, "" when it has none.
	Cgroup string
	// Freezer is the sandbox's dedicated v1 freezer cgroup path, "" when none.
	Freezer string
	// Frozen is true when the sandbox's workload is frozen: every live
	// member in its dedicated cgroup (every live member, without one) is
	// in a frozen cgroup, v2 or v1, whatever the shim outside it does.
	Frozen bool
	// FrozenProcesses counts the live members in a frozen cgroup, and
	// WorkloadProcesses the live members the paused test looks at.
	FrozenProcesses, WorkloadProcesses int
	// PausedNote says which part of a paused sandbox is frozen or stopped
	// ("" when it is not paused).
	PausedNote string
	// Orphan means one thing: the sandbox's supervisor is gone. A member
	// that escaped its tree while the supervisor lives is counted in
	// Escaped instead.
	Orphan bool
	// Escaped counts the live members that left their tree (see
	// Member.Escaped).
	Escaped int
	Zombies int
	// Dead is true when every member is a zombie.
	Dead bool
	// CgroupOnly is true when nothing but a cgroup a rule recognised names
	// the sandbox, although its runtime has rules for its root process (a
	// shim, conmon, bwrap): the root and its supervisor are gone, and the
	// sandbox is an orphan.
	CgroupOnly bool
	Paused     bool
	Badges     []Badge
	// Cleanup is the rule's cleanup paths with captures substituted.
	Cleanup []string
	// Conflicts are the claims that contradict where a process lives
	// (see build.resolveClaims): a process inside one sandbox that
	// names another in its argv.
	Conflicts []string
	// CleanupRefused says, one a template, why a cleanup path was not
	// made: a value the sandbox's processes showed would have climbed out
	// of the runtime's directory (an ID of "..").
	CleanupRefused []string
	// Reconcile is the runtime's own command, captures substituted, that
	// makes it notice the sandbox was killed behind its back (podman rm
	// --force <id>); nil when the runtime notices by itself.
	Reconcile []string
	// Inspect is the runtime's own command that prints its view of the
	// sandbox, from the same rule as Reconcile; nil when it has none.
	Inspect []string
	// Leftovers is what a sandbox with no process left still holds (no
	// Members, no Root, badge leftover); see Leftovers.Apply.
	Leftovers []Leftover
	// Trouble is the evidence for the badges oom, stuck and hollow; nil
	// when the sandbox has none of them (see Watch).
	Trouble *Trouble
	// Pod is set on a container taken alone (kill <container id>): the
	// sandbox it is a container of, which a teardown of it leaves running.
	Pod *Sandbox

	// idx is the sandbox's position in View.Sandboxes. supOrphan is the
	// supervisor's verdict alone (Orphan also counts escaped members), and
	// socket the supervisor socket path it was judged by, if any; rules
	// are every rule that recognised a member. What a refresh needs to
	// judge the sandbox again without building it.
	idx       int32
	key       string
	supOrphan bool
	socket    string
	rules     []*Rule
	// varsShared is set while Vars is a match's map, which sb must not
	// write (see build.addVars).
	varsShared bool
	// name is Name, when the key was spelt with it (see nameInKey): the
	// screen asks every sandbox's name at every refresh.
	name string
}

// Member is one process of a sandbox.
type Member struct {
	*proc.Process
	// MatchedBy names the matcher of the rule that recognised this very
	// process (Via == ViaRule): "argv", "cgroup", …
	MatchedBy string
	// Depth is 0 for top-level members.
	Depth    int
	Parent   *Member
	Children []*Member
	// Via says why the process is in the sandbox. It and Escaped sit next
	// to ord and sb, with which they fill one word (there is a Member per
	// process).
	Via Via
	// Escaped marks a member that left its tree: double-forked and
	// re-parented to PID 1 or a subreaper, still the sandbox's by its
	// cgroup. It says nothing of the sandbox's supervisor (see
	// Sandbox.Orphan).
	Escaped bool

	// ord is the member's position in its sandbox's Members, sb the
	// sandbox's in View.Sandboxes.
	ord, sb int32
}

// Name is the sandbox's qualified ID: "namespace/id", or the ID when the
// runtime has no namespace. It is what list shows and what kill accepts.
func (s *Sandbox) Name() string {
	if s.name != "" {
		return s.name
	}
	return qualify(s.Namespace, s.ID)
}

// Key is the sandbox's identity in one string, unique within a view:
// "runtime:namespace/id" (or "runtime:id"). Use it wherever a sandbox is
// remembered across refreshes (selection, tags, plans).
func (s *Sandbox) Key() string {
	if s.key != "" {
		return s.key
	}
	return s.Runtime + ":" + s.Name()
}

func qualify(ns, id string) string {
	if ns == "" {
		return id
	}
	return ns + "/" + id
}

// Sandbox returns the sandbox with this Key, or else the only one with
// this Name or ID; nil when there is none or the name is ambiguous
// (Resolve says why).
func (v *View) Sandbox(name string) *Sandbox {
	if sb := v.byKey(name); sb != nil {
		return sb
	}
	if hits := v.named(name); len(hits) == 1 {
		return hits[0]
	}
	return nil
}

// byKey returns the sandbox with this Key (or the namespaced one that
// absorbed the matches of this un-namespaced key), or the container of a
// pod with this Key, or nil.
func (v *View) byKey(key string) *Sandbox {
	if i, ok := v.byID[key]; ok {
		return v.Sandboxes[i]
	}
	return v.container(key)
}

// named lists the sandboxes whose Name or ID is name.
func (v *View) named(name string) []*Sandbox {
	var hits []*Sandbox
	for _, sb := range v.Sandboxes {
		if sb.ID == name || (sb.Namespace != "" && sb.Name() == name) {
			hits = append(hits, sb)
		}
	}
	return hits
}

// SandboxOf returns the sandbox a process belongs to, or nil.
func (v *View) SandboxOf(id proc.Identity) *Sandbox {
	if v.Snapshot == nil {
		return nil
	}
	i := positionOf(v.Snapshot.Procs, id)
	if i < 0 {
		return nil
	}
	return v.sandboxAt(i)
}

// positionOf returns the position of identity id in procs, a snapshot's
// processes in pid order, or -1.
func positionOf(procs []*proc.Process, id proc.Identity) int {
	i, ok := slices.BinarySearchFunc(procs, id.PID, func(p *proc.Process, pid int) int { return cmp.Compare(p.PID, pid) })
	if !ok || procs[i].Start != id.Start {
		return -1
	}
	return i
}

// sandboxAt returns the sandbox of the process at position i of the
// view's snapshot, or nil.
func (v *View) sandboxAt(i int) *Sandbox {
	if i >= len(v.members) || v.members[i] == nil {
		return nil
	}
	return v.Sandboxes[v.members[i].sb]
}

// HasBadge reports whether the sandbox carries b.
func (s *Sandbox) HasBadge(b Badge) bool {
	for _, x := range s.Badges {
		if x == b {
			return true
		}
	}
	return false
}

// Age is how old the sandbox is at the view's time: since its root
// started, or for a sandbox with no process left, since its youngest
// leftover last changed (0 when none has a time: only links, mounts).
func (v *View) Age(sb *Sandbox) time.Duration {
	if sb.Root != nil {
		return v.Time.Sub(v.Snapshot.StartTime(sb.Root.Process))
	}
	// The youngest leftover whose age the kernel gives: a link or a
	// mount has none, and would make every sandbox that left one look new.
	var age time.Duration
	seen := false
	for _, l := range sb.Leftovers {
		if l.ModTime.IsZero() {
			continue
		}
		if a := l.Age(v.Time); !seen || a < age {
			age, seen = a, true
		}
	}
	return age
}
