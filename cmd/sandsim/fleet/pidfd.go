package fleet

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc"
)

// errNotThere means the process named by an identity no longer exists: it
// exited, or its pid now belongs to someone else.
var errNotThere = errors.New("process is gone")

// pinned is a pidfd checked to refer to one identity.
type pinned struct {
	id proc.Identity
	fd int
}

// pin opens a pidfd for id.PID and then checks the start time. The order
// matters: once the pidfd is open it names one process for good, so if
// /proc/PID still shows the expected start time afterwards, the pidfd is
// that process and no recycled pid can be signalled through it
// (pidfd_open(2), "use case: avoid pid reuse races").
func pin(id proc.Identity) (*pinned, error) {
	fd, err := unix.PidfdOpen(id.PID, 0)
	if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
		// Gone: ENOENT is what kernels with pidfs can answer for a
		// process already reaped (seen on 6.18).
		return nil, errNotThere
	}
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", id.PID, err)
	}
	if _, ok, err := lookup(id); err != nil || !ok {
		unix.Close(fd)
		if err != nil {
			return nil, err
		}
		return nil, errNotThere
	}
	return &pinned{id: id, fd: fd}, nil
}

func (p *pinned) close() { unix.Close(p.fd) }

// signal sends sig through the pidfd. ESRCH (the process has exited in the
// meantime) is errNotThere; any other failure is an error, never success.
func (p *pinned) signal(sig unix.Signal) error {
	err := unix.PidfdSendSignal(p.fd, sig, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return errNotThere
	}
	if err != nil {
		return fmt.Errorf("pidfd_send_signal %s to %s: %w", unix.SignalName(sig), p.id, err)
	}
	return nil
}

// waitExit waits until the process has exited (a pidfd polls readable once
// its process is a zombie or reaped, pidfd_open(2)) or the timeout passes.
func (p *pinned) waitExit(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		ms := max(int(time.Until(deadline).Milliseconds()), 0)
		fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

// signalID sends sig to the process named by id, if it still exists.
func signalID(id proc.Identity, sig unix.Signal) error {
	p, err := pin(id)
	if err != nil {
		return err
	}
	defer p.close()
	return p.signal(sig)
}

// killAndWait SIGKILLs the process named by id and waits for it to exit.
// A process that is already gone counts as killed.
func killAndWait(id proc.Identity, timeout time.Duration) error {
	p, err := pin(id)
	if errors.Is(err, errNotThere) {
		return nil
	}
	if err != nil {
		return err
	}
	defer p.close()
	if err := p.signal(unix.SIGKILL); err != nil && !errors.Is(err, errNotThere) {
		return err
	}
	if !p.waitExit(timeout) {
		return fmt.Errorf("%s still alive %v after SIGKILL", id, timeout)
	}
	return nil
}
