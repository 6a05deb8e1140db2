package teardown

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc"
)

var (
	// ErrGone means the process has already exited (and usually been
	// reaped). That is the normal outcome of a teardown, not a failure.
	ErrGone = errors.New("process already exited")
	// ErrReused means the pid now belongs to another process: its start
	// time differs from the remembered one. It must never be signalled.
	ErrReused = errors.New("pid reused by another process")
	// ErrZombie means the process has exited but its parent has not reaped
	// it. errors.Is(ErrZombie, ErrGone) holds: a zombie needs nothing more
	// from us (not even SIGKILL reaches it), but callers can still say so.
	ErrZombie error = zombieError{}
)

type zombieError struct{}

func (zombieError) Error() string        { return "process is a zombie (exited, not reaped)" }
func (zombieError) Is(target error) bool { return target == ErrGone }

// pidfdOpen is pidfd_open(2); tests replace it to exercise the kill(2)
// fallback that kernels older than 5.3 need.
var pidfdOpen = unix.PidfdOpen

// Pinned is a handle on one process that cannot be redirected to another
// one by pid reuse.
//
// Normally it holds a pidfd (pidfd_open(2)): a file descriptor that keeps
// referring to the process it was opened for, so a signal sent through it
// after the process died fails with ESRCH instead of reaching whoever got
// the pid next. On kernels without pidfd_open (ENOSYS, Linux < 5.3) Fallback
// is set and Signal re-checks the start time right before kill(2); that
// leaves a window of a few microseconds in which the pid could be recycled,
// which is the best kill(2) allows and why the step result should say so.
//
// Signal, Exited and WaitExit may run concurrently; Close waits for them.
type Pinned struct {
	ID proc.Identity
	// Comm, PPID and Flags are read when the process was pinned, after
	// its pidfd was opened: they describe the process the pidfd holds.
	Comm  string
	PPID  int
	Flags uint
	// Fallback is true when no pidfd could be had and signals go through
	// kill(2) after a start-time re-check.
	Fallback bool

	procRoot string
	// mu guards fd: readers hold it shared while they use fd, Close takes it
	// exclusively. Closing a pidfd while another goroutine signals through
	// it could let the number be reused by an unrelated descriptor.
	mu     sync.RWMutex
	fd     int // -1 in fallback mode
	closed bool
}

// Pin opens a handle on the process id names, as seen in procRoot
// (normally "/proc"; it must show the same pid namespace as the caller).
//
// It fails with ErrGone, ErrZombie or ErrReused (wrapped) when the process
// named by id no longer runs, and with a *RefusedError for pid 0 and 1,
// which no teardown may ever signal.
func Pin(procRoot string, id proc.Identity) (*Pinned, error) {
	if id.PID <= 1 {
		return nil, &RefusedError{PID: id.PID, Reason: ReasonInit}
	}
	// The pidfd comes first and the stat check second, so that the check
	// is about the process the pidfd holds: the other order would let the
	// pid be recycled between a good check and the open.
	fd, err := pidfdOpen(id.PID, 0)
	fallback := false
	switch {
	case err == nil:
	case errors.Is(err, unix.ESRCH), errors.Is(err, unix.ENOENT):
		// ESRCH is the documented answer for a process that is gone;
		// kernels with pidfs can answer ENOENT instead for one that has
		// exited and been reaped (seen on 6.18).
		return nil, fmt.Errorf("pin %v: %w", id, ErrGone)
	case errors.Is(err, unix.ENOSYS):
		fd, fallback = -1, true
	default:
		return nil, fmt.Errorf("pin %v: pidfd_open: %w", id, err)
	}
	p := &Pinned{ID: id, Fallback: fallback, procRoot: procRoot, fd: fd}

	st, err := p.check()
	if err == nil && !fallback {
		// The stat read above described the pidfd's process only if that
		// process still held the pid when the read finished, and a process
		// keeps its pid until it is reaped. A pidfd turns readable when the
		// process exits (pidfd_open(2)), so "not readable now" proves the
		// read was about it. This also settles the one case stat gets wrong:
		// a thread-group leader that called pthread_exit shows state Z while
		// its other threads still run, and its pidfd is not readable.
		var exited bool
		exited, err = pollExited(fd)
		switch {
		case err != nil:
		case exited && st.Zombie():
			err = ErrZombie
		case exited:
			err = ErrGone
		}
	} else if err == nil && st.Zombie() {
		err = ErrZombie
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("pin %v: %w", id, err)
	}
	p.Comm, p.PPID, p.Flags = st.Comm, st.PPID, st.Flags
	return p, nil
}

// Signal sends sig to the pinned process. It returns ErrGone (wrapped) when
// the process has already exited and been reaped; a zombie accepts the
// signal and ignores it.
func (p *Pinned) Signal(sig unix.Signal) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return fmt.Errorf("signal %v: %w", p.ID, os.ErrClosed)
	}
	if p.Fallback {
		// Re-check immediately before kill(2), the closest we can get to
		// atomic without a pidfd.
		st, err := p.check()
		if err == nil && st.Zombie() {
			err = ErrZombie
		}
		if err != nil {
			return fmt.Errorf("signal %v %v: %w", p.ID, sig, err)
		}
		err = unix.Kill(p.ID.PID, sig)
		if errors.Is(err, unix.ESRCH) {
			err = ErrGone
		}
		if err != nil {
			return fmt.Errorf("kill %v %v: %w", p.ID, sig, err)
		}
		return nil
	}
	err := unix.PidfdSendSignal(p.fd, sig, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		err = ErrGone
	}
	if err != nil {
		return fmt.Errorf("pidfd_send_signal %v %v: %w", p.ID, sig, err)
	}
	return nil
}

// Exited reports, without blocking, whether the process has exited. A
// zombie counts as exited.
func (p *Pinned) Exited() (bool, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return false, fmt.Errorf("exited %v: %w", p.ID, os.ErrClosed)
	}
	return p.exitedLocked()
}

// exitedLocked is Exited for callers that already hold p.mu.
func (p *Pinned) exitedLocked() (bool, error) {
	if !p.Fallback {
		exited, err := pollExited(p.fd)
		if err != nil {
			return false, fmt.Errorf("exited %v: %w", p.ID, err)
		}
		return exited, nil
	}
	st, err := p.check()
	switch {
	case errors.Is(err, ErrGone), errors.Is(err, ErrReused):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("exited %v: %w", p.ID, err)
	}
	return st.Zombie(), nil
}

// Close releases the pidfd. It waits for concurrent Signal, Exited and
// WaitExit calls on p to return, and is safe to call more than once.
func (p *Pinned) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.fd < 0 {
		return nil
	}
	fd := p.fd
	p.fd = -1
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("close pidfd of %v: %w", p.ID, err)
	}
	return nil
}

// check reads the process's stat and reports ErrGone when it is missing and
// ErrReused when its start time is not the pinned one.
func (p *Pinned) check() (proc.Stat, error) {
	st, err := readStat(p.procRoot, p.ID.PID)
	if err != nil {
		return proc.Stat{}, err
	}
	if st.Start != p.ID.Start {
		return proc.Stat{}, fmt.Errorf("%w: pid %d started at %d, not %d", ErrReused, p.ID.PID, st.Start, p.ID.Start)
	}
	return st, nil
}

// pollExited asks a pidfd, without blocking, whether its process exited.
func pollExited(fd int) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if _, err := pollRetry(fds, 0); err != nil {
		return false, fmt.Errorf("poll pidfd: %w", err)
	}
	return pidfdReady(fds[0].Revents)
}

// pidfdReady interprets poll(2) revents of a pidfd. The kernel reports
// POLLIN once the thread group has exited (zombie or reaped); newer kernels
// add POLLHUP once it has been reaped.
func pidfdReady(revents int16) (bool, error) {
	if revents&unix.POLLNVAL != 0 {
		return false, fmt.Errorf("poll pidfd: %w", unix.EBADF)
	}
	return revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0, nil
}

// pollRetry is poll(2) restarted after EINTR (the Go runtime preempts
// goroutines with signals). A restarted finite timeout starts over, which
// is fine because finite timeouts here only pace re-checks.
func pollRetry(fds []unix.PollFd, timeoutMS int) (int, error) {
	for {
		n, err := unix.Poll(fds, timeoutMS)
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// readStat reads one process's stat through proc's parser; a missing
// process is ErrGone.
func readStat(procRoot string, pid int) (proc.Stat, error) {
	st, err := proc.ReadStat(procRoot, pid)
	if proc.IsVanished(err) {
		return proc.Stat{}, fmt.Errorf("%w: %v", ErrGone, err)
	}
	return st, err
}
