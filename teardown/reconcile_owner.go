package teardown

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// reconcileOwner is the uid a sandbox's reconcile command runs as, nil for
// sandtop's own: the owner of the runtime process the sandbox's rule
// recognised by its own command line (its exe, argv or flags), when that
// process is the root of the sandbox's tree. That is podman's conmon,
// which the podman of the container's owner started: a rootless
// container's reconcile names the user's storage (--root, --runroot), and
// run by root it would leave files there the user's podman can no longer
// change. A sandbox recognised by its cgroup alone (a standalone runc
// container: its root is the container's init, whose uid the container
// chooses) keeps sandtop's own. A lazy scan leaves the uid unread (0): it
// is read then from procRoot, and an owner that cannot be read is unknown
// (-1), which runs nothing.
func reconcileOwner(sb *model.Sandbox, procRoot string) *int {
	r := sb.Root
	if r == nil || r.Via != model.ViaRule {
		return nil
	}
	switch r.MatchedBy {
	case model.ByExe, model.ByArgv, model.ByFlag:
	default:
		return nil
	}
	uid := r.UID
	if r.Unread&proc.FieldStatus != 0 {
		uid = readUID(procRoot, r.ID())
	}
	return &uid
}

// readUID reads the real uid of the process id from its status file, -1
// when it cannot: gone, or its pid taken by another process since.
func readUID(procRoot string, id proc.Identity) int {
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(id.PID), "status"))
	if err != nil {
		return -1
	}
	// Read after the status: a process that still has the identity now
	// had it when its status was read (a pid is reused only once its
	// process is gone).
	if now, _, err := proc.ReadIdentity(procRoot, id.PID); err != nil || now != id {
		return -1
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if uid, err := strconv.Atoi(f[0]); err == nil {
					return uid
				}
			}
		}
	}
	return -1
}

// asOwner makes cmd run as the plan's reconcile owner, with that user's
// environment: its passwd entry's home, name and groups, its
// XDG_RUNTIME_DIR and session bus where they exist (rootless podman finds
// its pause process and the user's systemd through them), and none of
// sandtop's own variables but PATH. A command whose owner cannot be
// become (no passwd entry, sandtop not root) is not run: it fails.
func asOwner(cmd *exec.Cmd, p *Plan) error {
	if p.ReconcileAs == nil || *p.ReconcileAs == os.Geteuid() {
		return nil
	}
	uid := *p.ReconcileAs
	if uid < 0 {
		return fmt.Errorf("not run: the owner of %s could not be read (its process gone or unreadable), and it is not run as anyone else", p.Target)
	}
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return fmt.Errorf("not run: %s belongs to uid %d, which has no passwd entry to run it as", p.Target, uid)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("not run: %s belongs to %s (uid %d), and only root can run it as them", p.Target, u.Username, uid)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return fmt.Errorf("not run: %s's primary group %q: %w", u.Username, u.Gid, err)
	}
	var groups []uint32
	if ids, err := u.GroupIds(); err == nil {
		for _, g := range ids {
			if n, err := strconv.Atoi(g); err == nil {
				groups = append(groups, uint32(n))
			}
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}}
	cmd.Env = []string{"HOME=" + u.HomeDir, "USER=" + u.Username, "LOGNAME=" + u.Username, "PATH=" + os.Getenv("PATH")}
	runDir := fmt.Sprintf("/run/user/%d", uid)
	if fi, err := os.Stat(runDir); err == nil && fi.IsDir() && ownedBy(fi, uid) {
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+runDir)
		if _, err := os.Stat(runDir + "/bus"); err == nil {
			cmd.Env = append(cmd.Env, "DBUS_SESSION_BUS_ADDRESS=unix:path="+runDir+"/bus")
		}
	}
	cmd.Dir = "/"
	if fi, err := os.Stat(u.HomeDir); err == nil && fi.IsDir() {
		cmd.Dir = u.HomeDir
	}
	return nil
}

func ownedBy(fi os.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// reconcileCommand is the reconcile command as an operator would type it,
// with the user to run it as when that is not sandtop's own.
func (p *Plan) reconcileCommand() string {
	cmd := ShellQuote(p.Reconcile)
	switch {
	case p.ReconcileAs == nil || *p.ReconcileAs == os.Geteuid():
	case *p.ReconcileAs < 0:
		cmd += " as its owner (unknown)"
	default:
		name := "uid " + strconv.Itoa(*p.ReconcileAs)
		if u, err := user.LookupId(strconv.Itoa(*p.ReconcileAs)); err == nil {
			name = u.Username + " (" + name + ")"
		}
		cmd += " as " + name
	}
	return cmd
}
