package fleet

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc"
)

// owner is the fleet's owner process: a child subreaper that starts every
// top-level node, reaps whatever is re-parented to it, reports the manifest
// and tears everything down when told to or when its parent dies.
type owner struct {
	outMu sync.Mutex
	out   *json.Encoder

	env   hostEnv
	notes []string
	plan  *plan
	m     *Manifest
	// ids maps a report key to the identity of the process that sent it.
	ids map[string]proc.Identity

	exe      string
	devnull  *os.File
	lifeline *os.File // the write end; never inherited by anyone
	// lifeR is the read end the nodes inherit, kept for nodes started
	// after the fleet (a restarted supervisor).
	lifeR *os.File
	// exited receives the pids the reaper reaped, for noticing a node that
	// dies during start.
	exited chan int
}

// startTimeout bounds the wait for every node to report ready; it grows
// with the fleet, since bulk fleets start thousands of processes on a
// couple of cores.
func startTimeout(processes int) time.Duration {
	return 30*time.Second + time.Duration(processes)*20*time.Millisecond
}

// ownerComm is the owner's argv[0] and task name.
const ownerComm = "sandsim-owner"

// teardownTimeout bounds killing, reaping and removing everything.
const teardownTimeout = 15 * time.Second

// runOwner plays the owner role: stdin carries the start request and then
// commands, stdout the manifest, replies and the teardown result.
func runOwner() error {
	// Name the task after its role, not after the binary that plays it.
	if err := writeKnob("/proc/self/comm", ownerComm); err != nil {
		return fmt.Errorf("set comm: %w", err)
	}
	o := &owner{
		out:    json.NewEncoder(os.Stdout),
		ids:    map[string]proc.Identity{},
		exited: make(chan int, 64),
	}
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("read start request: %w", err)
	}
	var req startRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return fmt.Errorf("decode start request: %w", err)
	}
	errs := o.run(req, in)
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}

// run starts the fleet, serves commands and tears down. The returned
// errors are the teardown's (a failed start is reported on stdout).
func (o *owner) run(req startRequest, in *bufio.Reader) []error {
	// Orphans are re-parented to the nearest subreaper ancestor rather than
	// to PID 1 (prctl(2), PR_SET_CHILD_SUBREAPER); this is what lets the
	// owner reap every process of the fleet, and play PID 1's part for
	// orphaned and detached sandboxes.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return o.fail(fmt.Errorf("become a subreaper: %w", err))
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// Once the parent is gone, a write to stdout would kill a Go program
	// with SIGPIPE (os/signal, "SIGPIPE") before it had cleaned up. Catching
	// it turns the write into EPIPE; unlike SIG_IGN, a caught signal is
	// reset to the default in the children at execve.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	sigchld := make(chan os.Signal, 1)
	signal.Notify(sigchld, syscall.SIGCHLD)
	go func() {
		for range sigchld {
			o.reap()
		}
	}()
	cmds := make(chan command)
	go readCommands(in, cmds)

	if err := o.start(req, sigs, cmds); err != nil {
		return o.fail(err)
	}
	o.send(ownerMsg{Manifest: o.m})
	for {
		select {
		case c, ok := <-cmds:
			if !ok {
				return o.teardown()
			}
			o.send(ownerMsg{Reply: o.do(c)})
		case <-sigs:
			return o.teardown()
		}
	}
}

// fail reports a failed start after cleaning up what was started.
func (o *owner) fail(err error) []error {
	errs := o.cleanup()
	if len(errs) > 0 {
		err = fmt.Errorf("%w; cleanup: %w", err, errors.Join(errs...))
	}
	o.send(ownerMsg{Error: err.Error()})
	return errs
}

// teardown removes everything and reports the result.
func (o *owner) teardown() []error {
	errs := o.cleanup()
	d := &done{}
	for _, e := range errs {
		d.Errors = append(d.Errors, e.Error())
	}
	o.send(ownerMsg{Done: d})
	return errs
}

func (o *owner) cleanup() []error {
	if o.lifeline != nil {
		o.lifeline.Close()
	}
	c := cleanup{cgroupDirs: o.env.cgroupDirs(), base: o.env.base, reap: o.reap, sweep: sweepChildren}
	for _, id := range o.ids {
		c.procs = append(c.procs, id)
	}
	return c.run(teardownTimeout)
}

func (o *owner) send(msg ownerMsg) {
	o.outMu.Lock()
	defer o.outMu.Unlock()
	if err := o.out.Encode(msg); err != nil {
		fmt.Fprintf(os.Stderr, "sandsim owner: write to parent: %v\n", err)
	}
}

// reap waits for every exited child. The owner starts its children with
// os.StartProcess and never waits for one by pid, so reaping any child is
// safe here (it would not be in a process that also uses exec.Cmd.Wait).
func (o *owner) reap() {
	for {
		pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
		select {
		case o.exited <- pid:
		default:
		}
	}
}

// sweepChildren SIGKILLs every child of the owner and returns how many it
// has, zombies included. As a subreaper the owner inherits every orphan of
// its subtree, so once it has no child at all, no process of the fleet is
// left, including any that had not reported yet when a start failed. A
// child's pid cannot be reused before the owner reaps it, and the pidfd is
// checked to be the owner's child after it is opened, so a pid that the
// reaper freed in between is never hit.
func sweepChildren() int {
	self := os.Getpid()
	kids, err := children(self)
	if err != nil {
		return 0
	}
	for _, pid := range kids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && st.PPID == self {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
	return len(kids)
}

func readCommands(in *bufio.Reader, cmds chan<- command) {
	defer close(cmds)
	dec := json.NewDecoder(in)
	for {
		var c command
		if err := dec.Decode(&c); err != nil {
			return // EOF or garbage: either way the parent is done with us
		}
		cmds <- c
	}
}

// start builds the plan, starts every process, waits until all have
// reported and applies the post-start actions.
func (o *owner) start(req startRequest, sigs <-chan os.Signal, cmds <-chan command) error {
	if err := req.Spec.Validate(); err != nil {
		return err
	}
	var err error
	if o.exe, err = os.Executable(); err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	// Every process of the fleet inherits this cwd unless told otherwise;
	// daemons run in /, and no test's working directory is pinned.
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if o.devnull, err = os.Open(os.DevNull); err != nil {
		return err
	}
	if o.env, o.notes, err = openHost(req.Dir); err != nil {
		return err
	}
	if o.plan, err = buildPlan(req.Spec, o.env); err != nil {
		return err
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return err
	}
	o.lifeline = lifeW
	repR, repW, err := os.Pipe()
	if err != nil {
		return err
	}
	top := map[int]string{}
	for _, n := range o.plan.top {
		pid, err := startNode(o.exe, n, []*os.File{o.devnull, o.devnull, os.Stderr, lifeR, repW})
		if err != nil {
			return err
		}
		top[pid] = n.Role
	}
	// Only the nodes hold the report pipe's write end now: it reads EOF
	// once every node has reported and closed its copy. The lifeline's
	// read end is kept for restarted supervisors; holding it does not
	// delay the EOF the nodes wait for, which comes with the write end.
	o.lifeR = lifeR
	repW.Close()
	if err := o.collect(repR, top, sigs, cmds, startTimeout(len(o.plan.members))); err != nil {
		return err
	}
	if o.m, err = o.manifest(req.Spec.Scenario); err != nil {
		return err
	}
	return o.settle()
}

// collect reads reports until every expected process has reported.
func (o *owner) collect(r *os.File, top map[int]string, sigs <-chan os.Signal, cmds <-chan command, timeout time.Duration) error {
	reports := make(chan report)
	go func() {
		defer close(reports)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var rep report
			if json.Unmarshal(sc.Bytes(), &rep) == nil {
				reports <- rep
			}
		}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for len(o.ids) < len(o.plan.members) {
		select {
		case rep, ok := <-reports:
			if !ok {
				return fmt.Errorf("every node closed the report pipe with %d of %d processes ready", len(o.ids), len(o.plan.members))
			}
			if rep.Err != "" {
				return fmt.Errorf("node failed: %s", rep.Err)
			}
			if _, known := o.plan.members[rep.Key]; !known {
				return fmt.Errorf("report from unknown process %q", rep.Key)
			}
			o.ids[rep.Key] = proc.Identity{PID: rep.PID, Start: rep.Start}
		case pid := <-o.exited:
			if role, ok := top[pid]; ok {
				return fmt.Errorf("%s (pid %d) exited during start", role, pid)
			}
		case <-timer.C:
			return fmt.Errorf("timed out after %v waiting for %s", timeout, o.missing())
		case s := <-sigs:
			return fmt.Errorf("interrupted by %v during start", s)
		case _, ok := <-cmds:
			if !ok {
				return errors.New("parent closed stdin during start")
			}
		}
	}
	return nil
}

// missing names the processes that have not reported yet.
func (o *owner) missing() string {
	var roles []string
	for key, role := range o.plan.members {
		if _, ok := o.ids[key]; !ok {
			roles = append(roles, role)
		}
	}
	sort.Strings(roles)
	if len(roles) > 10 {
		roles = append(roles[:10], fmt.Sprintf("and %d more", len(roles)-10))
	}
	return strings.Join(roles, ", ")
}

// manifest assembles the manifest from the plan and the reports.
func (o *owner) manifest(scenario string) (*Manifest, error) {
	self, err := identityOf(os.Getpid())
	if err != nil {
		return nil, err
	}
	m := &Manifest{
		Scenario:   scenario,
		Owner:      Process{Identity: self, Role: "owner", Argv: os.Args, Comm: ownerComm},
		Base:       o.env.base,
		CgroupDirs: o.env.cgroupDirs(),
		Rootful:    o.env.rootful,
		Notes:      slices.Clone(o.notes),
	}
	if h := o.env.v2; h != nil {
		m.Cgroup = h.path(h.top)
	}
	if h := o.env.v1; h != nil {
		m.Freezer = h.path(h.top)
	}
	sups := map[*node]Process{}
	for _, s := range o.plan.supervisors {
		sups[s] = o.process(s)
		m.Supervisors = append(m.Supervisors, sups[s])
	}
	for _, bp := range o.plan.boxes {
		sb := bp.m
		o.walk(bp.root, func(p Process) { sb.Processes = append(sb.Processes, p) })
		if bp.sup != nil {
			sup := sups[bp.sup]
			sb.Supervisor = &sup
		}
		m.Sandboxes = append(m.Sandboxes, sb)
	}
	for _, n := range o.plan.bystanders {
		m.Bystanders = append(m.Bystanders, o.process(n))
	}
	return m, nil
}

// process is the manifest entry of the process a node ends up as.
func (o *owner) process(n *node) Process {
	r := n.reporter()
	return Process{Identity: o.ids[r.Key], Role: r.Role, Argv: r.Argv, Comm: r.comm()}
}

// walk visits a sandbox's processes in tree pre-order: each node, its
// leaves and zombies, its children, then its escaped double-fork child.
func (o *owner) walk(n *node, visit func(Process)) {
	r := n.reporter()
	visit(o.process(r))
	for _, l := range append(slices.Clone(r.Leaves), r.Zombies...) {
		visit(Process{Identity: o.ids[l.Key], Role: l.Role, Argv: l.Argv, Comm: commOf(l.Path)})
	}
	for _, c := range r.Children {
		o.walk(c, visit)
	}
	if r.Escape != nil {
		o.walk(r.Escape, visit)
	}
}

// startNode starts a node process from exe with the given descriptors
// (stdin, stdout, stderr, lifeline, report) and returns its pid. The
// caller never waits for it by pid: it is reaped by whoever reaps all
// children.
func startNode(exe string, n *node, files []*os.File) (int, error) {
	env, err := nodeEnv(n)
	if err != nil {
		return 0, err
	}
	sys := &syscall.SysProcAttr{Setpgid: n.Setpgid, Setsid: n.Setsid}
	if n.NewPidNS {
		sys.Cloneflags = syscall.CLONE_NEWPID
	}
	if n.DieWithParent {
		sys.Pdeathsig = syscall.SIGKILL
	}
	p, err := os.StartProcess(exe, n.Argv, &os.ProcAttr{Dir: n.Dir, Env: env, Files: files, Sys: sys})
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", n.Role, err)
	}
	pid := p.Pid
	_ = p.Release()
	return pid, nil
}
