package teardown

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// ErrRefused matches every *RefusedError: errors.Is(err, ErrRefused).
var ErrRefused = errors.New("refused")

// Reason says why a target is refused.
type Reason string

// Reasons for refusing a target.
const (
	// ReasonInit: pid 1 is the machine's init (here, its agent) and pid 0
	// or below is not a process; kill(2) would read 0 as "my process group"
	// and -1 as "every process I may signal".
	ReasonInit Reason = "init or not a process"
	// ReasonKernelThread: kernel threads ignore signals and must not be
	// "torn down".
	ReasonKernelThread Reason = "kernel thread"
	// ReasonSelf: sandtop itself.
	ReasonSelf Reason = "sandtop itself"
	// ReasonAncestor: a parent, grandparent… of sandtop (its shell, sudo,
	// tmux, the sandbox it runs in).
	ReasonAncestor Reason = "ancestor of sandtop"
	// ReasonSupervisor: the runner that owns a sandbox; the engine decides
	// this one from the model (Refuse does not).
	ReasonSupervisor Reason = "sandbox supervisor"
	// ReasonCgroupHoldsProtected: freezing or killing the cgroup would hit a
	// protected process somewhere in its subtree.
	ReasonCgroupHoldsProtected Reason = "cgroup holds a protected process"
)

// RefusedError says that a process or cgroup must not be touched, and why.
type RefusedError struct {
	// PID is the refused process, or for a cgroup the protected process
	// found inside it.
	PID int
	// Comm is the process's task name when known.
	Comm string
	// Cgroup is the refused cgroup directory, "" for a process.
	Cgroup string
	Reason Reason
	// Detail optionally replaces Reason in the message with something more
	// specific ("supervisor of sandbox x: kill the sandbox, not its runner").
	Detail string
}

func (e *RefusedError) Error() string {
	why := string(e.Reason)
	if e.Detail != "" {
		why = e.Detail
	}
	// The comm and the cgroup's path are the process's choice, and this
	// message goes to stderr and the status line whole.
	who := fmt.Sprintf("pid %d", e.PID)
	if e.Comm != "" {
		who += " (" + model.Printable(e.Comm) + ")"
	}
	if e.Cgroup != "" {
		return fmt.Sprintf("refused cgroup %s: %s: %s", model.Printable(e.Cgroup), why, who)
	}
	return fmt.Sprintf("refused %s: %s", who, why)
}

// Is makes errors.Is(err, ErrRefused) true for every refusal.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// pfKthread is PF_KTHREAD from include/linux/sched.h, the flag the kernel
// sets on its own threads (stat field 9).
const pfKthread = 0x00200000

// kthreadd is the kernel thread that parents every other kernel thread.
const kthreadd = 2

// Refuse returns a *RefusedError when p must never be signalled: pid 0 or
// 1, a kernel thread, the process self (sandtop, as snap sees it) or any of
// its ancestors in snap. It returns nil otherwise. A rule's supervisor is
// the engine's business, judged from the model.
func Refuse(snap *proc.Snapshot, p *proc.Process, self int) error {
	refuse := func(r Reason) error { return &RefusedError{PID: p.PID, Comm: p.Comm, Reason: r} }
	switch {
	case p.PID <= 1:
		return refuse(ReasonInit)
	// Belt and braces: Kernel is derived from the same facts by the
	// scanner, but a hand-built or partial Process may lack it.
	case p.Kernel || p.Flags&pfKthread != 0 || p.PID == kthreadd || p.PPID == kthreadd:
		return refuse(ReasonKernelThread)
	case p.PID == self:
		return refuse(ReasonSelf)
	}
	if snap == nil {
		return nil
	}
	// Walk up from self. The seen set stops a cycle, which a snapshot taken
	// while pids were recycled could in principle contain.
	seen := map[int]bool{self: true}
	for q := snap.Proc(self); q != nil && q.PPID > 0 && !seen[q.PPID]; q = snap.Proc(q.PPID) {
		if q.PPID == p.PID {
			return refuse(ReasonAncestor)
		}
		seen[q.PPID] = true
	}
	return nil
}

// SelfAndAncestors returns the live pid of the calling process, as procRoot
// names it (procRoot/self), and the pid of each of its ancestors up to init.
// Teardown protects all of them.
func SelfAndAncestors(procRoot string) (map[int]bool, error) {
	// procfs resolves "self" in the pid namespace of the mount, so this is
	// right even when procRoot is a host /proc seen from a container, where
	// os.Getpid would name a different process.
	link, err := os.Readlink(filepath.Join(procRoot, "self"))
	if err != nil {
		return nil, fmt.Errorf("find self: %w", err)
	}
	pid, err := strconv.Atoi(link)
	if err != nil {
		return nil, fmt.Errorf("find self: %s/self -> %q is not a pid", procRoot, link)
	}
	chain := map[int]bool{}
	for pid > 0 && !chain[pid] {
		chain[pid] = true
		st, err := readStat(procRoot, pid)
		if err != nil {
			// An ancestor that exits mid-walk re-parents us; the chain
			// read so far is still worth protecting, but say so.
			return chain, fmt.Errorf("ancestors of self: %w", err)
		}
		pid = st.PPID
	}
	return chain, nil
}

// RefuseCgroup returns a *RefusedError when dir's subtree holds one of the
// protected pids (typically SelfAndAncestors plus pid 1): cgroup.kill and
// cgroup.freeze act on the whole subtree, so freezing sandtop's own cgroup
// would hang it and killing it would kill it. A vanished cgroup is not
// refused. A process that moves in after the check is not caught.
func RefuseCgroup(dir string, protected map[int]bool) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		pids, err := ReadProcs(path)
		if errors.Is(err, ErrCgroupGone) {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		for _, pid := range pids {
			if protected[pid] {
				return &RefusedError{PID: pid, Cgroup: strings.TrimSuffix(dir, "/"), Reason: ReasonCgroupHoldsProtected}
			}
		}
		return nil
	})
	var refused *RefusedError
	if errors.As(err, &refused) {
		return refused
	}
	if err != nil {
		return fmt.Errorf("check cgroup %s: %w", dir, err)
	}
	return nil
}
