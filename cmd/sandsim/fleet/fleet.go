package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Options tune Start.
type Options struct {
	// Exe is the binary to re-execute as owner and nodes; it must call
	// MaybeRun first thing. Default: os.Executable(), which for a test is
	// the test binary itself.
	Exe string
	// Dir is where the owner makes its temp directory; default
	// os.TempDir(). Unix socket paths must fit in 107 bytes, so keep it
	// short.
	Dir string
	// Stderr receives the owner's and the nodes' diagnostics; default
	// os.Stderr.
	Stderr io.Writer
}

// Fleet is a running fleet.
type Fleet struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu sync.Mutex // serialises commands and guards m
	m  Manifest

	replies chan *reply
	done    chan *done // closed when the owner's stdout ends

	closeOnce sync.Once
	closeErr  error
}

// Start starts a fleet and returns once every process is up and the
// post-start actions (orphaning, pausing) are done. ctx bounds the start
// only; the fleet lives until Close.
//
// Start makes the calling process a child subreaper (prctl(2)
// PR_SET_CHILD_SUBREAPER) for the rest of its life. Should the owner die
// abruptly, its descendants are then re-parented to the caller instead of
// to PID 1, which may never reap them; Close reaps them. A caller that
// runs other children it waits for by pid is unaffected.
func Start(ctx context.Context, spec Spec, opts Options) (*Fleet, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("become a subreaper: %w", err)
	}
	exe := opts.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find own executable: %w", err)
		}
	}
	dir := opts.Dir
	if dir != "" {
		var err error
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, err
		}
	}
	stderr := opts.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	cmd := exec.Command(exe)
	cmd.Args = []string{ownerComm}
	cmd.Env = append(os.Environ(), envRole+"="+roleOwner, goraceEnv())
	cmd.Stderr = stderr
	// The nodes inherit the owner's stderr. When it is a pipe (stderr not
	// an *os.File), Wait would wait for every node to close it; a node that
	// outlived its owner must not hang Close.
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A session of its own keeps the fleet out of the terminal's
		// foreground process group: ^C reaches the caller, which then
		// closes the fleet in order, instead of killing nodes at random.
		Setsid: true,
		// The owner tears the fleet down when its parent dies. The kernel
		// sends this when the thread that forked the owner exits; Go keeps
		// its threads, except those of goroutines that exit while locked
		// with runtime.LockOSThread, so do not call Start from one.
		Pdeathsig: syscall.SIGTERM,
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start owner: %w", err)
	}
	f := &Fleet{cmd: cmd, stdin: stdin, replies: make(chan *reply), done: make(chan *done, 1)}
	first := make(chan ownerMsg, 1)
	go f.readOwner(stdout, first)

	req, err := json.Marshal(startRequest{Spec: spec, Dir: dir})
	if err == nil {
		_, err = stdin.Write(append(req, '\n'))
	}
	if err != nil {
		_ = f.abort()
		return nil, fmt.Errorf("send spec to owner: %w", err)
	}
	select {
	case msg, ok := <-first:
		if ok && msg.Manifest != nil {
			f.m = *msg.Manifest
			return f, nil
		}
		waitErr := f.abort()
		if msg.Error != "" {
			return nil, fmt.Errorf("start fleet: %s", msg.Error)
		}
		return nil, fmt.Errorf("start fleet: owner exited without a manifest (%v)", waitErr)
	case <-ctx.Done():
		// Closing stdin makes the owner abandon the start and clean up.
		_ = f.abort()
		return nil, fmt.Errorf("start fleet: %w", ctx.Err())
	}
}

// readOwner dispatches the owner's stdout: the first message (manifest or
// error), then replies, then the teardown result.
func (f *Fleet) readOwner(r io.Reader, first chan<- ownerMsg) {
	defer close(f.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<30) // a bulk manifest is one long line
	sentFirst := false
	for sc.Scan() {
		var msg ownerMsg
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			continue
		}
		switch {
		case !sentFirst:
			first <- msg
			close(first)
			sentFirst = true
		case msg.Reply != nil:
			f.replies <- msg.Reply
		case msg.Done != nil:
			f.done <- msg.Done
		}
	}
	if !sentFirst {
		close(first)
	}
}

// abort closes stdin and waits for the owner after a failed start; the
// owner cleans up before it exits.
func (f *Fleet) abort() error {
	f.stdin.Close()
	return f.wait(teardownTimeout + 5*time.Second)
}

// wait waits for the owner process, killing it after the timeout.
func (f *Fleet) wait(timeout time.Duration) error {
	waited := make(chan error, 1)
	go func() { waited <- f.cmd.Wait() }()
	select {
	case err := <-waited:
		return err
	case <-time.After(timeout):
		_ = f.cmd.Process.Kill()
		return fmt.Errorf("owner did not exit within %v; killed it: %w", timeout, <-waited)
	}
}

// Manifest returns the fleet's manifest, updated by the commands since.
func (f *Fleet) Manifest() Manifest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m
}

// KillSupervisor SIGKILLs the supervisor of the sandbox (by ID or name),
// orphaning every sandbox it supervised.
func (f *Fleet) KillSupervisor(id string) error { return f.command(opKillSupervisor, id) }

// BounceSupervisor restarts the supervisor of the sandbox (by ID or name)
// as a new process: a socket supervisor listens again, a parent supervisor
// (the vm0 runner) starts its runs again under the same IDs. The manifest
// then carries the new identities of what restarted.
func (f *Fleet) BounceSupervisor(id string) error { return f.command(opBounceSupervisor, id) }

// Freeze freezes the sandbox's cgroup (SIGSTOPs it when it has none).
func (f *Fleet) Freeze(id string) error { return f.command(opFreeze, id) }

// Thaw undoes Freeze, or the pause the sandbox was started with.
func (f *Fleet) Thaw(id string) error { return f.command(opThaw, id) }

func (f *Fleet) command(op, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := json.Marshal(command{Op: op, ID: id})
	if err != nil {
		return err
	}
	if _, err := f.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%s %s: owner gone: %w", op, id, err)
	}
	select {
	case r := <-f.replies:
		for _, sb := range r.Sandboxes {
			if s := f.m.Sandbox(sb.ID); s != nil {
				*s = sb
			}
		}
		if r.Error != "" {
			return fmt.Errorf("%s %s: %s", op, id, r.Error)
		}
		return nil
	case <-f.done:
		return fmt.Errorf("%s %s: owner gone", op, id)
	}
}

// Close tears the fleet down and returns an error naming anything that
// survived: a process of the manifest (zombie or not), a cgroup directory,
// the temp directory. If the owner died without tearing down (it was
// killed), Close does the teardown itself, as the owner would have, and
// reaps what was re-parented to the caller. Close is idempotent.
func (f *Fleet) Close() error {
	f.closeOnce.Do(func() { f.closeErr = f.close() })
	return f.closeErr
}

func (f *Fleet) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stdin.Close()
	var errs []error
	var result *done
	select {
	case result = <-f.done:
	case <-time.After(teardownTimeout + 5*time.Second):
		errs = append(errs, errors.New("owner did not report its teardown"))
	}
	waitErr := f.wait(5 * time.Second)
	c := cleanupOf(&f.m)
	c.reap = f.reaper()
	if result == nil {
		// The owner is gone without cleaning up: do its job. Its nodes
		// exit on their own once the lifeline closes, except paused ones.
		errs = append(errs, c.run(teardownTimeout)...)
	} else {
		for _, e := range result.Errors {
			errs = append(errs, errors.New(e))
		}
		if waitErr != nil {
			errs = append(errs, fmt.Errorf("owner: %w", waitErr))
		}
		// Trust, but verify: anything the owner missed is a leak.
		errs = append(errs, c.leaks()...)
	}
	return errors.Join(errs...)
}

// reaper returns a function that reaps this process's zombie children that
// belong to the fleet: those named in the manifest, and those in a session
// led by the owner or by a process of the manifest (a fork loop's child,
// say, below a shim that called setsid). Every session of the fleet is led
// by one of these. Children the caller started itself are left for it to
// wait for.
func (f *Fleet) reaper() func() {
	self := os.Getpid()
	known := map[int]uint64{}
	sessions := map[int]bool{f.m.Owner.PID: true}
	for _, p := range f.m.Processes() {
		known[p.PID] = p.Start
		sessions[p.PID] = true
	}
	return func() {
		kids, err := children(self)
		if err != nil {
			return
		}
		for _, pid := range kids {
			st, err := readStat(pid)
			if err != nil || st.State != "Z" {
				continue
			}
			if start, ok := known[pid]; (ok && start == st.Starttime) || sessions[st.Session] {
				_, _ = unix.Wait4(pid, nil, unix.WNOHANG, nil)
			}
		}
	}
}
