package teardown

// Waiting without sleep loops: a pidfd turns readable when its process
// exits (pidfd_open(2)), and a cgroup's cgroup.events file raises an
// inotify IN_MODIFY when one of its values changes (cgroup-v2.rst, "a value
// change in this file generates a file modified event"). Both are waited on
// with poll(2) together with an eventfd that a context's end writes to, so
// cancellation wakes the wait at once instead of at the next timeout slice.
// poll rather than epoll because the set is built once per wait and shrinks
// as processes exit; poll has no per-fd limit below RLIMIT_NOFILE, which
// the Go runtime raises to the hard limit at start-up.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// fallbackRecheck paces stat re-reads for processes pinned without a pidfd,
// which have nothing to poll.
const fallbackRecheck = 20 * time.Millisecond

// WaitExit blocks until every pinned process has exited (a zombie counts)
// or ctx ends. exited lists the processes seen to exit, in the order they
// were seen; err is ctx.Err() when ctx ended first. It does not reap.
func WaitExit(ctx context.Context, pins []*Pinned) (exited []*Pinned, err error) {
	// Hold every pin shared for the whole wait so a concurrent Close cannot
	// free (and the kernel reuse) a descriptor that poll is watching.
	for _, p := range pins {
		p.mu.RLock()
	}
	defer func() {
		for _, p := range pins {
			p.mu.RUnlock()
		}
	}()
	for _, p := range pins {
		if p.closed {
			return nil, fmt.Errorf("wait for %v: %w", p.ID, os.ErrClosed)
		}
	}
	if len(pins) == 0 {
		return nil, nil
	}
	wake, err := newCtxWaker(ctx)
	if err != nil {
		return nil, err
	}
	defer wake.Close()

	pending := append([]*Pinned(nil), pins...)
	fds := make([]unix.PollFd, 0, len(pins)+1)
	for {
		// fds[0] is the waker, then one entry per pidfd pin in pending
		// order; fallback pins have no descriptor and are re-read instead.
		fds = append(fds[:0], unix.PollFd{Fd: int32(wake.fd), Events: unix.POLLIN})
		timeout := -1
		for _, p := range pending {
			if p.Fallback {
				timeout = int(fallbackRecheck / time.Millisecond)
				continue
			}
			fds = append(fds, unix.PollFd{Fd: int32(p.fd), Events: unix.POLLIN})
		}
		if _, err := pollRetry(fds, timeout); err != nil {
			return exited, fmt.Errorf("poll %d pidfds: %w", len(fds)-1, err)
		}
		still, next := pending[:0], 1
		for _, p := range pending {
			var gone bool
			if p.Fallback {
				gone, err = p.exitedLocked()
			} else {
				gone, err = pidfdReady(fds[next].Revents)
				next++
			}
			if err != nil {
				return exited, fmt.Errorf("wait for %v: %w", p.ID, err)
			}
			if gone {
				exited = append(exited, p)
			} else {
				still = append(still, p)
			}
		}
		pending = still
		if len(pending) == 0 {
			return exited, nil
		}
		if fds[0].Revents != 0 {
			return exited, ctx.Err()
		}
	}
}

// WaitCgroupEmpty blocks until cgroup.events in the v2 cgroup dir says
// "populated 0" (no process left in its subtree) or ctx ends. A cgroup
// that no longer exists is empty.
func WaitCgroupEmpty(ctx context.Context, dir string) error {
	err := waitCgroupEvent(ctx, dir, "populated", "0")
	if errors.Is(err, ErrCgroupGone) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("wait for cgroup %s to empty: %w", dir, err)
	}
	return nil
}

// waitCgroupEvent blocks until the key line of dir/cgroup.events reads want.
func waitCgroupEvent(ctx context.Context, dir, key, want string) error {
	if err := checkCgroupFS(dir, fsV2); err != nil {
		return err
	}
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("inotify_init1: %w", err)
	}
	defer unix.Close(ifd)
	// Watch before the first read, so a change between the read and the
	// watch cannot be missed.
	path := filepath.Join(dir, "cgroup.events")
	if _, err := unix.InotifyAddWatch(ifd, path, unix.IN_MODIFY); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return missingFile(dir, "cgroup.events", ErrNotCgroup)
		}
		return fmt.Errorf("inotify_add_watch %s: %w", path, err)
	}
	wake, err := newCtxWaker(ctx)
	if err != nil {
		return err
	}
	defer wake.Close()

	fds := []unix.PollFd{
		{Fd: int32(ifd), Events: unix.POLLIN},
		{Fd: int32(wake.fd), Events: unix.POLLIN},
	}
	buf := make([]byte, 4096)
	for {
		b, err := readCgroupFile(dir, "cgroup.events", fsV2, ErrNotCgroup)
		if err != nil {
			return err
		}
		got, ok := eventValue(b, key)
		if !ok {
			return fmt.Errorf("%s has no %q line", path, key)
		}
		if got == want {
			return nil
		}
		if fds[1].Revents != 0 {
			return fmt.Errorf("%s still reads %s %s: %w", path, key, got, ctx.Err())
		}
		if _, err := pollRetry(fds, -1); err != nil {
			return fmt.Errorf("poll inotify: %w", err)
		}
		// Drain the queued events; their content does not matter, only
		// that the file changed, and the loop re-reads it.
		for {
			if _, err := unix.Read(ifd, buf); err != nil {
				break
			}
		}
	}
}

// eventValue returns the value of key in a flat-keyed cgroup file such as
// cgroup.events ("populated 1\nfrozen 0\n").
func eventValue(b []byte, key string) (string, bool) {
	for line := range bytes.Lines(b) {
		k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte(" "))
		if ok && string(k) == key {
			return string(v), true
		}
	}
	return "", false
}

// ctxWaker is an eventfd that turns readable when ctx ends, so that a
// blocking poll(2) can wait for "something happened" and "caller gave up"
// at once.
type ctxWaker struct {
	fd   int
	stop func() bool
	done chan struct{}
}

func newCtxWaker(ctx context.Context) (*ctxWaker, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	w := &ctxWaker{fd: fd, done: make(chan struct{})}
	w.stop = context.AfterFunc(ctx, func() {
		defer close(w.done)
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		// Cannot fail: the counter is far below its maximum (eventfd(2)).
		_, _ = unix.Write(fd, one[:])
	})
	return w, nil
}

// Close stops the waker. If the context already fired, it first waits for
// the write to finish, so the write can never land on a reused descriptor.
func (w *ctxWaker) Close() error {
	if !w.stop() {
		<-w.done
	}
	return unix.Close(w.fd)
}
