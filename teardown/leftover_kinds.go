package teardown

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// Each kind of leftover other than a path or a cgroup is removed here,
// after a fresh read that it is still the thing the plan named and that
// nothing uses it: the plan was made from a scan that may be seconds old.

// removeKind removes a netns, link, mount or socket leftover; handled is
// false for the other kinds.
func (r *run) removeKind(l model.Leftover) (gone, handled bool) {
	var what string
	var err error
	switch l.Kind {
	case proc.KindNetns:
		what, err = "netns "+l.Name, removeNetns(l)
	case proc.KindLink:
		what, err = "link "+linkLabel(l), removeLink(l)
	case proc.KindMount:
		what, err = "mount "+l.Path+mountNSLabel(l), unmountLeftover(l)
	case proc.KindSocket:
		what, err = "socket "+l.Path, removeSocket(l, r.p.Sandbox.ID)
	default:
		return false, false
	}
	var kept *keptError
	switch {
	case errors.As(err, &kept):
		r.event(Event{Step: StepCleanup, Status: Skip, Detail: "kept " + what + ": " + kept.why})
		return false, true
	case errors.Is(err, fs.ErrNotExist):
		r.event(Event{Step: StepCleanup, Status: OK, Detail: what + " already gone"})
		return true, true
	case err != nil:
		errno, human := Describe(err)
		r.event(Event{Step: StepCleanup, Status: Fail, Error: errno, Detail: what + ": " + human + ": " + err.Error()})
		return false, true
	}
	r.event(Event{Step: StepCleanup, Status: OK, Detail: "removed " + what})
	return true, true
}

// keptError says why a leftover found in use, or changed, is kept.
type keptError struct{ why string }

func (e *keptError) Error() string { return e.why }

func kept(format string, a ...any) error { return &keptError{fmt.Sprintf(format, a...)} }

func linkLabel(l model.Leftover) string {
	if l.Netns != "" {
		return l.Name + " in netns " + l.Netns
	}
	return l.Name
}

func mountNSLabel(l model.Leftover) string {
	if l.NSPID == 0 {
		return ""
	}
	return " in the mount namespace of pid " + strconv.Itoa(l.NSPID)
}

// removeNetns deletes a named network namespace as ip netns delete does
// (iproute2 ip/ipnetns.c netns_delete: a lazy unmount, then unlink), when
// the name still binds the namespace the plan saw and no process is in
// it (every /proc/PID/ns/net compared by inode).
func removeNetns(l model.Leftover) error {
	if !filepath.IsAbs(l.Path) || filepath.Base(l.Path) != l.Name || !slices.Contains(proc.NetnsDirs, filepath.Dir(l.Path)) && !underNetnsDir(l.Path) {
		return kept("%s is not in a netns directory", l.Path)
	}
	var st unix.Stat_t
	if err := unix.Stat(l.Path, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: l.Path, Err: err}
	}
	var sfs unix.Statfs_t
	bound := unix.Statfs(l.Path, &sfs) == nil && sfs.Type == unix.NSFS_MAGIC
	ino := uint64(0)
	if bound {
		ino = st.Ino
	}
	if ino != l.Ino {
		return kept("the name now binds another namespace (inode %d, was %d)", ino, l.Ino)
	}
	if ino != 0 {
		ns, err := proc.ReadNamespaces("")
		if err != nil {
			return err
		}
		if ns.Host(ino) {
			return kept("the host's own network namespace")
		}
		if pids := ns.Net[ino]; len(pids) > 0 {
			return kept("in use: %s in it", model.PIDList(pids))
		}
	}
	if filepath.Dir(l.Path) == "/run/netns" {
		if !bound {
			return os.Remove(l.Path)
		}
		return netns.DeleteNamed(l.Name)
	}
	// netns.DeleteNamed knows only /run/netns; the same two steps for
	// another netns directory.
	if bound {
		if err := unix.Unmount(l.Path, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount: %w", err)
		}
	}
	return os.Remove(l.Path)
}

func underNetnsDir(p string) bool {
	for _, d := range proc.NetnsDirs {
		if real, err := filepath.EvalSymlinks(d); err == nil && filepath.Dir(p) == real {
			return true
		}
	}
	return false
}

// removeLink deletes a virtual network device through netlink, when the
// name still names the device (same index, same type) in the same
// namespace and no process holds it open.
func removeLink(l model.Leftover) error {
	if !slices.Contains(model.VirtualLinkTypes, l.LinkType) {
		return kept("a %s device", l.LinkType)
	}
	h, err := proc.LinkHandleAt(l.Netns)
	if err != nil {
		return err
	}
	defer h.Close()
	link, err := h.LinkByName(l.Name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return fs.ErrNotExist
	}
	if err != nil {
		return fmt.Errorf("find link: %w", err)
	}
	if a := link.Attrs(); a.Index != l.Index || link.Type() != l.LinkType {
		return kept("the name now names another device (index %d, %s; was %d, %s)", a.Index, link.Type(), l.Index, l.LinkType)
	}
	if pids := proc.TapHolders("")[l.Name]; len(pids) > 0 {
		return kept("in use: %s holds it open", model.PIDList(pids))
	}
	if err := h.LinkDel(link); err != nil {
		return fmt.Errorf("delete link: %w", err)
	}
	return nil
}

// unmountLeftover lazily unmounts a mount leftover, when it is still
// mounted in the namespace the plan saw and no process of that namespace
// works in it. A mount in another namespace is unmounted from a thread
// that joins it: the thread is not given back to the runtime after (it
// unshared its file system attributes and cannot return), so Go ends it.
func unmountLeftover(l model.Leftover) error {
	if !filepath.IsAbs(l.Path) || filepath.Clean(l.Path) != l.Path || l.Path == "/" {
		return kept("not an absolute, clean mount point")
	}
	ns, err := proc.ReadNamespaces("")
	if err != nil {
		return err
	}
	var nsFile *os.File
	if l.NSPID != 0 {
		// The pid may have been reused: the namespace is opened through
		// it once and checked by inode, and that open file is what the
		// thread joins.
		nsFile, err = os.Open(fmt.Sprintf("/proc/%d/ns/mnt", l.NSPID))
		if err != nil {
			return kept("pid %d, the way into its mount namespace, is gone: %v", l.NSPID, err)
		}
		defer nsFile.Close()
		var st unix.Stat_t
		if err := unix.Fstat(int(nsFile.Fd()), &st); err != nil || st.Ino != l.MntNS {
			return kept("pid %d is no longer in mount namespace %d", l.NSPID, l.MntNS)
		}
	} else if ns.SelfMnt != l.MntNS {
		return kept("sandtop's mount namespace changed")
	}
	pidsIn := ns.Mnt[l.MntNS]
	if users := proc.MountUsers("", pidsIn, l.Path); len(users) > 0 {
		return kept("in use: %s works in it", model.PIDList(users))
	}
	mounted, err := stillMounted(l)
	if err != nil {
		return err
	}
	if !mounted {
		return fs.ErrNotExist
	}
	if nsFile == nil {
		return unmountDetach(l.Path)
	}
	return unmountIn(nsFile, l.NSPID, l.Path)
}

// unmountIn unmounts p lazily in the mount namespace open at nsFile (that
// of pid) from a thread of its own. setns(2) into a mount namespace needs
// a thread that shares no file system attributes (unshare CLONE_FS); the
// thread then goes back into sandtop's namespace and working directory
// and is given back to the runtime. It must not be left to die: a child
// started with a parent-death signal from that thread would be killed
// with it (prctl(2) PR_SET_PDEATHSIG is the thread's, not the process's).
// Only a thread that could not be put back is kept locked, and so ends.
func unmountIn(nsFile *os.File, pid int, p string) error {
	own, err := os.Open("/proc/thread-self/ns/mnt")
	if err != nil {
		return fmt.Errorf("open own mount namespace: %w", err)
	}
	defer own.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored := false
		defer func() {
			if restored {
				runtime.UnlockOSThread()
			}
		}()
		cwd, err := unix.Open(".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			restored = true
			errc <- fmt.Errorf("open working directory: %w", err)
			return
		}
		defer unix.Close(cwd)
		var root unix.Stat_t
		if err := unix.Stat("/", &root); err != nil {
			restored = true
			errc <- fmt.Errorf("stat /: %w", err)
			return
		}
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			restored = true
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		err = unix.Setns(int(nsFile.Fd()), unix.CLONE_NEWNS)
		if err != nil {
			err = fmt.Errorf("join the mount namespace of pid %d: %w", pid, err)
		} else {
			err = unmountDetach(p)
		}
		var back unix.Stat_t
		switch berr := unix.Setns(int(own.Fd()), unix.CLONE_NEWNS); {
		case berr != nil:
			err = errors.Join(err, fmt.Errorf("return to sandtop's mount namespace: %w", berr))
		case unix.Fchdir(cwd) != nil || unix.Stat("/", &back) != nil || back.Dev != root.Dev || back.Ino != root.Ino:
			// setns put the thread at the namespace's root: a chrooted
			// sandtop could not be put back where it was.
		default:
			restored = true
		}
		errc <- err
	}()
	return <-errc
}

func unmountDetach(p string) error {
	// UMOUNT_NOFOLLOW: a symbolic link planted at the mount point since
	// the plan is not followed elsewhere.
	if err := unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil {
		return fmt.Errorf("unmount: %w", err)
	}
	return nil
}

// stillMounted reports whether the mount point is in the mount table of
// the leftover's namespace.
func stillMounted(l model.Leftover) (bool, error) {
	src := "/proc/self/mountinfo"
	if l.NSPID != 0 {
		src = fmt.Sprintf("/proc/%d/mountinfo", l.NSPID)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return false, fmt.Errorf("read mounts: %w", err)
	}
	needle := " " + mangle(l.Path) + " "
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.SplitN(line, " ", 6)
		if len(f) >= 5 && " "+f[4]+" " == needle {
			return true, nil
		}
	}
	return false, nil
}

// mangle escapes a path as mountinfo prints it (fs/proc_namespace.c).
func mangle(p string) string {
	return strings.NewReplacer(" ", `\040`, "\t", `\011`, "\n", `\012`, `\`, `\134`).Replace(p)
}

// removeSocket unlinks a unix socket file when nothing, in any network
// namespace, listens on it.
func removeSocket(l model.Leftover, id string) error {
	if !model.SafeCleanupPath(l.Path, id) {
		return kept("not an absolute, clean path naming the sandbox ID")
	}
	fi, err := os.Lstat(l.Path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return kept("no longer a socket")
	}
	ns, err := proc.ReadNamespaces("")
	if err != nil {
		return err
	}
	for _, pids := range ns.Net {
		for _, pid := range pids {
			ls, err := proc.UnixListenersOf("", pid)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return kept("cannot tell whether something listens on it: %v", err)
			}
			if ls[l.Path] {
				return kept("something listens on it")
			}
			break
		}
	}
	return os.Remove(l.Path)
}
