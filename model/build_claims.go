package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sandtop/sandtop/proc"
)

// Rule 1c: where a process lives outranks what it says. A rule that
// matches a process on what it shows of itself (argv, exe, comm, cwd)
// takes its claim: a process inside sandbox A can rename itself like a
// shim and put B's ID in its argv. Such a claim yields to
//
//   - the cgroup: the process lives in a cgroup where a rule's cgroup
//     matcher recognised another sandbox, and whose path does not name
//     the claimed one;
//   - the tree: the process descends from a member another rule matched,
//     and the sandbox it claims has members elsewhere (a sandbox whose
//     every claimant sits inside another's tree is nested, as containers
//     in a VM are, and stays a sandbox of its own).
//
// The process then counts in the sandbox where it lives, as a process
// placed there by its location (never as a matched member: it names no
// root, no supervisor socket, no ID or capture of that sandbox), and both
// sandboxes carry a conflict that says so. So a kill of B never signals it,
// a kill of A takes it, and neither sandbox's supervision can be faked.
func (w *build) resolveClaims() {
	var homes map[string]*Sandbox
	type move struct {
		i        int
		from, to *Sandbox
		via      Via
	}
	var moves []move
	nested := map[*Sandbox]bool{}
	for i, p := range w.snap.Procs {
		sb := w.owner[i]
		if sb == nil || w.via[i] != ViaRule || w.by[i] == ByCgroup {
			continue
		}
		if homes == nil {
			homes = w.cgroupHomes(false)
		}
		home, via := homes[p.Cgroup], ViaCgroup
		if home == nil || home == sb || namesInPath(p.Cgroup, sb.Namespace, sb.ID) {
			home, via = w.ruleAncestor(p), ViaAncestor
		}
		if home == nil || home == sb {
			continue
		}
		if via == ViaCgroup || w.claimedElsewhere(sb, home, homes) {
			moves = append(moves, move{i: i, from: sb, to: home, via: via})
		} else if !nested[sb] && home.ID != sb.ID {
			// (The same ID under another runtime is one container run
			// by two, see mergeNested.)
			nested[sb] = true
			sb.Conflicts = append(sb.Conflicts, fmt.Sprintf("every process that claims %s lives inside %s (pid %d %s): shown as a sandbox nested in it",
				sb.Key(), home.Key(), p.PID, Printable(p.Comm)))
		}
	}
	for _, m := range moves {
		p := w.snap.Procs[m.i]
		w.procs[m.from] = slices.DeleteFunc(w.procs[m.from], func(q *proc.Process) bool { return q == p })
		w.matched[m.from] = slices.DeleteFunc(w.matched[m.from], func(q *proc.Process) bool { return q == p })
		w.owner[m.i] = nil
		w.attributed--
		w.assign(m.i, p, m.to, m.via)
		where := "cgroup " + p.Cgroup
		if m.via == ViaAncestor {
			where = "process tree"
		}
		claim := fmt.Sprintf("pid %d (%s) claims %s in its %s, but lives in %s's %s",
			p.PID, p.Comm, m.from.Key(), w.by[m.i], m.to.Key(), where)
		m.to.Conflicts = append(m.to.Conflicts, claim+": it is counted here")
		if len(w.procs[m.from]) == 0 {
			delete(w.byID, m.from.Key())
			delete(w.procs, m.from)
			delete(w.matched, m.from)
			continue
		}
		m.from.Conflicts = append(m.from.Conflicts, claim+": it is not counted here")
	}
}

// cgroupHomes maps each cgroup where a rule's cgroup matcher recognised a
// sandbox to that sandbox (nil when it recognised two there). Without
// weak, a cgroup known by its shape alone (containerd's /<ns>/<id>, see
// attributeByRule) is no home: any two-level path has that shape.
func (w *build) cgroupHomes(weak bool) map[string]*Sandbox {
	homes := map[string]*Sandbox{}
	for i, p := range w.snap.Procs {
		sb := w.owner[i]
		if sb == nil || w.via[i] != ViaRule || w.by[i] != ByCgroup || p.Cgroup == "" {
			continue
		}
		if m, _ := w.match(p); !weak && (m.Rule == nil || m.Rule.NestedPIDNamespace && m.Rule.onlyCgroup()) {
			continue
		}
		if old, ok := homes[p.Cgroup]; ok && old != sb {
			homes[p.Cgroup] = nil
			continue
		}
		homes[p.Cgroup] = sb
	}
	return homes
}

// ruleAncestor is the sandbox of p's nearest ancestor that a rule
// matched, nil when none is.
func (w *build) ruleAncestor(p *proc.Process) *Sandbox {
	for cur, steps := w.ix.of(p.PPID), 0; cur >= 0 && steps <= len(w.snap.Procs); steps++ {
		q := w.snap.Procs[cur]
		if w.excluded(q) {
			return nil
		}
		if sb := w.owner[cur]; sb != nil && w.via[cur] == ViaRule {
			return sb
		}
		cur = w.ix.of(q.PPID)
	}
	return nil
}

// claimedElsewhere reports whether sb has a matched member that lives
// outside home (neither in a cgroup of home's nor below one of its matched
// members): then sb is a sandbox of its own, and a claimant inside home is
// an impostor.
func (w *build) claimedElsewhere(sb, home *Sandbox, homes map[string]*Sandbox) bool {
	for _, q := range w.matched[sb] {
		if homes[q.Cgroup] != home && !w.descendsFrom(q, home) {
			return true
		}
	}
	return false
}

// descendsFrom reports whether an ancestor of p is a matched member of sb.
func (w *build) descendsFrom(p *proc.Process, sb *Sandbox) bool {
	for cur, steps := w.ix.of(p.PPID), 0; cur >= 0 && steps <= len(w.snap.Procs); steps++ {
		q := w.snap.Procs[cur]
		if w.excluded(q) {
			return false
		}
		if w.owner[cur] == sb && w.via[cur] == ViaRule {
			return true
		}
		cur = w.ix.of(q.PPID)
	}
	return false
}

// ConflictText is the sandbox's conflicts on one line, "" when none.
func (sb *Sandbox) ConflictText() string { return strings.Join(sb.Conflicts, "; ") }
