package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nodeRun is the state of a running node process.
type nodeRun struct {
	n        *node
	exe      string
	self     int  // pid as /proc shows it
	nested   bool // in a child pid namespace of /proc's
	lifeline *os.File
	report   *os.File
	devnull  *os.File

	mu sync.Mutex
	// reap holds the (namespace-local) pids of children to wait for; zombie
	// children are deliberately absent. forked marks the fork loop's.
	reap   map[int]bool
	forked map[int]bool
}

// runNode plays the node described by the environment. It returns only on
// a setup error; otherwise the node lives until its lifeline closes or it
// is killed, and exits without returning.
func runNode() error {
	var n node
	if err := json.Unmarshal([]byte(os.Getenv(envNode)), &n); err != nil {
		return fmt.Errorf("decode %s: %w", envNode, err)
	}
	r := &nodeRun{
		n:        &n,
		lifeline: os.NewFile(fdLifeline, "lifeline"),
		report:   os.NewFile(fdReport, "report"),
		reap:     map[int]bool{},
		forked:   map[int]bool{},
	}
	err := r.run()
	if errors.Is(err, syscall.EPIPE) {
		return nil // the owner gave up on the start: nobody to tell
	}
	// run returns only when the node could not be set up; tell the owner
	// why, so the start fails with a reason instead of a timeout.
	_ = r.send(report{Key: n.reporter().Key, Err: fmt.Sprintf("%s: %v", n.Role, err)})
	return err
}

func (r *nodeRun) run() error {
	n := r.n
	// Rename first: until now the task is named after the test binary.
	// prctl(PR_SET_NAME) would rename only the calling thread, and a
	// goroutine is not tied to the main thread; writing /proc/self/comm
	// renames the thread-group leader, whose name /proc/PID/comm shows
	// (proc(5), "/proc/[pid]/comm").
	if err := writeKnob("/proc/self/comm", n.comm()); err != nil {
		return fmt.Errorf("set comm: %w", err)
	}
	for _, dir := range n.Cgroups {
		if err := joinCgroup(dir, 0); err != nil {
			return err
		}
	}
	if n.IgnoreTERM {
		signal.Ignore(syscall.SIGTERM)
	}
	var err error
	if r.exe, err = os.Executable(); err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	if r.devnull, err = os.Open(os.DevNull); err != nil {
		return err
	}
	if n.Daemonize != nil {
		// The middle of a double fork: start the grandchild in a session of
		// its own and exit, leaving it to be re-parented.
		if _, err := r.startNode(n.Daemonize); err != nil {
			return err
		}
		os.Exit(0)
	}
	if n.Exec != nil {
		env, err := nodeEnv(n.Exec)
		if err != nil {
			return err
		}
		return fmt.Errorf("exec %s: %w", n.Exec.Role, syscall.Exec(r.exe, n.Exec.Argv, env))
	}
	if r.self, err = selfPID(); err != nil {
		return err
	}
	if r.nested, err = nestedPidNS(r.self); err != nil {
		return err
	}
	if n.Listen != "" {
		if err := listen(n.Listen); err != nil {
			return err
		}
	}
	// Ask for SIGCHLD before the first child exists, so none is missed.
	sigchld := make(chan os.Signal, 1)
	signal.Notify(sigchld, syscall.SIGCHLD)

	if err := r.startAll(); err != nil {
		return err
	}
	id, err := identityOf(r.self)
	if err != nil {
		return err
	}
	if err := r.send(report{Key: n.Key, PID: id.PID, Start: id.Start}); err != nil {
		return err
	}
	r.report.Close()
	if n.Fork != nil {
		go r.forkLoop(n.Fork)
	}
	go func() {
		// Blocks until the owner is gone: every write end is closed.
		_, _ = io.Copy(io.Discard, r.lifeline)
		os.Exit(0)
	}()
	monitor := n.ExitAfter != nil && r.waiting() > 0
	for {
		select {
		case <-sigchld:
		case <-time.After(time.Second):
		}
		r.reapChildren()
		if monitor && r.waiting() == 0 {
			r.exitAfterChildren(n.ExitAfter)
		}
	}
}

// waiting counts the children the node still waits for.
func (r *nodeRun) waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reap)
}

// exitAfterChildren ends a monitor whose children are gone, as conmon ends
// once its container has: blocked a while, then the exit file, then exit.
func (r *nodeRun) exitAfterChildren(e *exitAfter) {
	time.Sleep(e.Delay)
	if err := os.WriteFile(e.File, []byte("137"), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "sandsim %s: exit file: %v\n", r.n.Role, err)
		os.Exit(1)
	}
	if e.Cleanup > 0 {
		cleanup := exec.Command("/bin/sleep", strconv.FormatFloat(e.Cleanup.Seconds(), 'f', 3, 64))
		if err := cleanup.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "sandsim %s: cleanup: %v\n", r.n.Role, err)
			os.Exit(1)
		}
	}
	os.Exit(0)
}

// startAll starts the node's children, leaves, zombies and escapee.
func (r *nodeRun) startAll() error {
	n := r.n
	for _, c := range n.Children {
		pid, err := r.startNode(c)
		if err != nil {
			return err
		}
		r.track(pid, false)
	}
	for _, l := range n.Leaves {
		if _, err := r.startLeaf(l, true); err != nil {
			return err
		}
	}
	for _, z := range n.Zombies {
		pid, err := r.startLeaf(z, false)
		if err != nil {
			return err
		}
		// Wait for the exit without reaping (WNOWAIT), so the child stays a
		// zombie, and only then report it.
		var info unix.Siginfo
		for {
			err = unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("wait for zombie %s: %w", z.Role, err)
		}
	}
	if n.Escape != nil {
		middle := &node{
			Role:      "middle",
			Argv:      n.Escape.Argv,
			Comm:      n.Escape.Comm,
			Daemonize: n.Escape,
		}
		pid, err := r.startNode(middle)
		if err != nil {
			return err
		}
		// The double fork is done when the middle has exited and its
		// child has been re-parented; only then is this node ready.
		for {
			_, err = unix.Wait4(pid, nil, 0, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("wait for the middle of the double fork: %w", err)
		}
	}
	return nil
}

// startNode starts a child node; it returns the namespace-local pid.
func (r *nodeRun) startNode(c *node) (int, error) {
	return startNode(r.exe, c, []*os.File{r.devnull, r.devnull, os.Stderr, r.lifeline, r.report})
}

// startLeaf starts a leaf, moves it into its cgroups and, when it has a
// key, reports it; reap says whether to wait for it once it exits. A leaf
// never forks, so moving it after the start cannot leave a descendant
// behind. Leaves die with this node (PR_SET_PDEATHSIG survives execve,
// prctl(2)), since they cannot watch the lifeline.
func (r *nodeRun) startLeaf(l *leaf, reap bool) (int, error) {
	p, err := os.StartProcess(l.Path, l.Argv, &os.ProcAttr{
		Files: []*os.File{r.devnull, r.devnull, r.devnull},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", l.Role, err)
	}
	local := p.Pid
	_ = p.Release()
	if reap {
		r.track(local, false)
	}
	// cgroup.procs takes pids of the writer's pid namespace.
	for _, dir := range l.Cgroups {
		if err := joinCgroup(dir, local); err != nil {
			return 0, err
		}
	}
	if l.Key == "" {
		return local, nil
	}
	host, err := hostPID(r.self, r.nested, local)
	if err != nil {
		return 0, err
	}
	id, err := identityOf(host)
	if err != nil {
		return 0, err
	}
	return local, r.send(report{Key: l.Key, PID: id.PID, Start: id.Start})
}

// forkLoop keeps starting short-lived leaves, which are reaped as they exit.
func (r *nodeRun) forkLoop(f *forkSpec) {
	t := time.NewTicker(f.Every)
	defer t.Stop()
	for range t.C {
		r.mu.Lock()
		alive := len(r.forked)
		r.mu.Unlock()
		if alive >= f.Max {
			continue
		}
		l := &leaf{Role: "forked", Path: f.Path, Argv: f.Argv}
		pid, err := r.startLeaf(l, false)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandsim %s: fork: %v\n", r.n.Role, err)
			continue
		}
		r.track(pid, true)
	}
}

func (r *nodeRun) track(pid int, forked bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reap[pid] = true
	if forked {
		r.forked[pid] = true
	}
}

// reapChildren waits for every exited child it should reap. Only listed
// pids are waited for, because zombie children must stay zombies; a node
// that is the init of a pid namespace reaps everything, as init must.
func (r *nodeRun) reapChildren() {
	if os.Getpid() == 1 {
		for {
			pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				return
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for pid := range r.reap {
		wpid, err := unix.Wait4(pid, nil, unix.WNOHANG, nil)
		if wpid == pid || errors.Is(err, unix.ECHILD) {
			delete(r.reap, pid)
			delete(r.forked, pid)
		}
	}
}

func (r *nodeRun) send(rep report) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	if _, err := r.report.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("report %s: %w", rep.Key, err)
	}
	return nil
}

// listen makes a unix socket listener that accepts and drops connections
// for the life of the process; the kernel closes it when the process dies,
// leaving the socket file behind as a real crashed supervisor would.
func listen(path string) error {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return nil
}
