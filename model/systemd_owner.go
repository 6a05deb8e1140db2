package model

import (
	"path"
	"strings"

	"github.com/sandtop/sandtop/proc"
)

// SystemdOwns reports whether a systemd manager owns the cgroup at
// cgroupPath, so that it and not sandtop removes it: the path names a unit
// (IsSystemdUnit) and a systemd manager of that tree runs in snap. The
// system manager is PID 1 and owns every unit; a user manager (systemd
// --user, in user@<uid>.service/init.scope) owns the units below its
// user@<uid>.service. On a host whose init is not systemd a "….scope" is
// only a name a runtime chose (Docker's systemd driver, podman's), and
// nothing but the runtime, or sandtop, will remove it.
func SystemdOwns(snap *proc.Snapshot, cgroupPath string) bool {
	if snap == nil || !IsSystemdUnit(cgroupPath) {
		return false
	}
	if isSystemd(snap.Proc(1)) {
		return true
	}
	for _, p := range snap.Procs {
		if p.PID <= 1 || p.Kernel || !isSystemd(p) || p.Cgroup == "" {
			continue
		}
		// A user manager lives in <its unit>/init.scope and manages what
		// is below its unit.
		if unit := path.Dir(p.Cgroup); unit != "/" && strings.HasPrefix(cgroupPath, unit+"/") {
			return true
		}
	}
	return false
}

// isSystemd reports whether p is a systemd manager, by argv[0] or its exe
// (PID 1 is often /sbin/init, a link to systemd).
func isSystemd(p *proc.Process) bool {
	if p == nil {
		return false
	}
	if len(p.Argv) > 0 && path.Base(p.Argv[0]) == "systemd" {
		return true
	}
	exe := strings.TrimSuffix(p.Exe, deletedSuffix)
	return exe != "" && path.Base(exe) == "systemd"
}
