package fleet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/sandtop/sandtop/proc"
)

// bounceSupervisor restarts the sandbox's supervisor, the way systemd
// restarts a crashed containerd or an operator replaces a vm0 runner: the
// old process is SIGKILLed and a new one starts from the same node, with a
// new identity. A socket supervisor (containerd, Cubelet) listens on the
// same socket again; its sandboxes run on, unsupervised in between, as
// shims outlive containerd. A supervisor that is its sandboxes' parent
// (the vm0 runner) takes its runs over: the old trees it started are
// killed and the new one starts them again, with the same IDs and new
// identities.
func (o *owner) bounceSupervisor(s *Sandbox) ([]*Sandbox, error) {
	if s.Supervisor == nil {
		return nil, fmt.Errorf("sandbox %s has no supervisor", s.Name)
	}
	var sup *node
	for _, n := range o.plan.supervisors {
		if o.ids[n.reporter().Key] == s.Supervisor.Identity {
			sup = n
		}
	}
	if sup == nil {
		return nil, fmt.Errorf("sandbox %s: its supervisor %s is not one the fleet started", s.Name, s.Supervisor.Identity)
	}
	// Everything the old supervisor started dies with it: the new one
	// starts it again.
	var old []proc.Identity
	keys := map[string]bool{}
	o.walk(sup, func(p Process) { old = append(old, p.Identity) })
	var collect func(n *node)
	collect = func(n *node) {
		r := n.reporter()
		keys[r.Key] = true
		for _, l := range append(append([]*leaf{}, r.Leaves...), r.Zombies...) {
			keys[l.Key] = true
		}
		for _, c := range r.Children {
			collect(c)
		}
		if r.Escape != nil {
			collect(r.Escape)
		}
	}
	collect(sup)
	for _, id := range old {
		if err := killAndWait(id, actionTimeout); err != nil {
			return nil, err
		}
	}
	o.reap()
	if err := o.restart(sup, keys); err != nil {
		return nil, err
	}
	m, err := o.manifest(o.m.Scenario)
	if err != nil {
		return nil, err
	}
	// The new manifest carries the new identities; what happened to each
	// sandbox since the start (orphaned, paused) carries over, except that
	// the bounced supervisor's sandboxes are supervised again.
	var changed []*Sandbox
	for i := range m.Sandboxes {
		sb := &m.Sandboxes[i]
		prev := o.m.Sandbox(sb.ID)
		if prev == nil {
			continue
		}
		sb.Orphan, sb.Paused, sb.Notes, sb.PidNS = prev.Orphan, prev.Paused, prev.Notes, prev.PidNS
		if sb.Supervisor != nil && keys[sup.reporter().Key] && sb.Supervisor.Identity == o.ids[sup.reporter().Key] {
			sb.Orphan = false
			changed = append(changed, sb)
		}
	}
	o.m = m
	return changed, nil
}

// restart starts node n again and waits until every process in keys has
// reported its new identity.
func (o *owner) restart(n *node, keys map[string]bool) error {
	repR, repW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer repR.Close()
	_, err = startNode(o.exe, n, []*os.File{o.devnull, o.devnull, os.Stderr, o.lifeR, repW})
	repW.Close()
	if err != nil {
		return err
	}
	for k := range keys {
		delete(o.ids, k)
	}
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(repR)
		left := len(keys)
		for left > 0 && sc.Scan() {
			var rep report
			if json.Unmarshal(sc.Bytes(), &rep) != nil {
				continue
			}
			if rep.Err != "" {
				done <- fmt.Errorf("restarted node failed: %s", rep.Err)
				return
			}
			if keys[rep.Key] {
				o.ids[rep.Key] = proc.Identity{PID: rep.PID, Start: rep.Start}
				left--
			}
		}
		if left > 0 {
			done <- fmt.Errorf("restart of %s: %d processes never reported", n.Role, left)
			return
		}
		done <- nil
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(actionTimeout):
		return fmt.Errorf("restart of %s: timed out after %v", n.Role, actionTimeout)
	}
}
