package fleet

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// actionTimeout bounds each post-start action (a kill, a freeze).
const actionTimeout = 5 * time.Second

// settle applies the post-start actions: orphans lose their supervisor,
// paused sandboxes are paused.
func (o *owner) settle() error {
	for i := range o.m.Sandboxes {
		s := &o.m.Sandboxes[i]
		if s.Spec.Orphan {
			if _, err := o.killSupervisor(s); err != nil {
				return fmt.Errorf("orphan %s: %w", s.Name, err)
			}
		}
	}
	for i := range o.m.Sandboxes {
		s := &o.m.Sandboxes[i]
		if s.Spec.Pause != NotPaused {
			if err := o.pause(s, s.Spec.Pause); err != nil {
				return fmt.Errorf("pause %s: %w", s.Name, err)
			}
		}
	}
	return nil
}

// do runs one command from the parent.
func (o *owner) do(c command) *reply {
	s := o.m.Sandbox(c.ID)
	if s == nil {
		return &reply{Error: fmt.Sprintf("no sandbox %q", c.ID)}
	}
	var changed []*Sandbox
	var err error
	switch c.Op {
	case opKillSupervisor:
		changed, err = o.killSupervisor(s)
	case opBounceSupervisor:
		changed, err = o.bounceSupervisor(s)
	case opFreeze:
		err = o.pause(s, PauseFreeze)
		changed = []*Sandbox{s}
	case opThaw:
		err = o.resume(s)
		changed = []*Sandbox{s}
	default:
		err = fmt.Errorf("unknown command %q", c.Op)
	}
	r := &reply{}
	if err != nil {
		r.Error = err.Error()
	}
	for _, sb := range changed {
		r.Sandboxes = append(r.Sandboxes, *sb)
	}
	return r
}

// killSupervisor SIGKILLs the sandbox's supervisor and marks every sandbox
// it supervised as orphaned. A supervisor that was the parent of the
// sandbox's root (the vm0 runner) hands its children to the owner, the
// nearest subreaper; the kernel re-parents them before the supervisor
// becomes a zombie, so once it has exited the new parent shows.
func (o *owner) killSupervisor(s *Sandbox) ([]*Sandbox, error) {
	if s.Supervisor == nil {
		return nil, fmt.Errorf("sandbox %s has no supervisor", s.Name)
	}
	sup := s.Supervisor.Identity
	if err := killAndWait(sup, actionTimeout); err != nil {
		return nil, err
	}
	// Supervisors are the owner's children: reap it now, so that no
	// zombie of it is left for anyone to see.
	o.reap()
	var changed []*Sandbox
	for i := range o.m.Sandboxes {
		sb := &o.m.Sandboxes[i]
		if sb.Supervisor != nil && sb.Supervisor.Identity == sup {
			sb.Orphan = true
			changed = append(changed, sb)
		}
	}
	return changed, nil
}

// pause pauses a sandbox the requested way, or the nearest way the host
// allows, and says so in the sandbox's notes.
func (o *owner) pause(s *Sandbox, how Pause) error {
	if s.Paused != NotPaused {
		return fmt.Errorf("sandbox %s is already paused (%s)", s.Name, s.Paused)
	}
	if how == PauseFreezerV1 {
		if s.FreezerDir != "" {
			if err := setFrozen(s.FreezerDir, true, true, actionTimeout); err != nil {
				return err
			}
			s.Paused = PauseFreezerV1
			return nil
		}
		s.Notes = append(s.Notes, "no v1 freezer cgroup: froze the v2 cgroup instead")
		how = PauseFreeze
	}
	if how == PauseFreeze {
		if s.CgroupDir != "" {
			if err := setFrozen(s.CgroupDir, false, true, actionTimeout); err != nil {
				return err
			}
			s.Paused = PauseFreeze
			return nil
		}
		why := "no cgroup of its own"
		if !o.env.rootful {
			why = "no root"
		}
		s.Notes = append(s.Notes, why+": paused via SIGSTOP instead of cgroup freeze")
	}
	if err := o.signalSandbox(s, unix.SIGSTOP, "T"); err != nil {
		return err
	}
	s.Paused = PauseStop
	return nil
}

// resume undoes pause.
func (o *owner) resume(s *Sandbox) error {
	var err error
	switch s.Paused {
	case NotPaused:
		return fmt.Errorf("sandbox %s is not paused", s.Name)
	case PauseFreezerV1:
		err = setFrozen(s.FreezerDir, true, false, actionTimeout)
	case PauseFreeze:
		err = setFrozen(s.CgroupDir, false, false, actionTimeout)
	case PauseStop:
		err = o.signalSandbox(s, unix.SIGCONT, "")
	}
	if err == nil {
		s.Paused = NotPaused
	}
	return err
}

// signalSandbox signals every live member of the sandbox and, when state
// is set, waits until each shows that state in /proc/PID/stat.
func (o *owner) signalSandbox(s *Sandbox, sig unix.Signal, state string) error {
	var errs []error
	for _, p := range s.Processes {
		if p.Role == RoleZombie {
			continue
		}
		if err := signalID(p.Identity, sig); err != nil && !errors.Is(err, errNotThere) {
			errs = append(errs, err)
		}
	}
	if state == "" || len(errs) > 0 {
		return errors.Join(errs...)
	}
	deadline := time.Now().Add(actionTimeout)
	for _, p := range s.Processes {
		if p.Role == RoleZombie {
			continue
		}
		for {
			st, ok, err := lookup(p.Identity)
			if err != nil || !ok || st.State == state {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s %s: state %s, want %s", p.Role, p.Identity, st.State, state)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return nil
}
