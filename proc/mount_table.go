package proc

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// MountEntry is one mount in one mount namespace.
type MountEntry struct {
	Point, FSType, Source string
	// MntNS is the mount namespace's inode; PID is a process in it whose
	// mountinfo listed the mount, 0 for the reader's own namespace.
	MntNS uint64
	PID   int
	// Users are the processes of that namespace whose working or root
	// directory is at or below the mount point.
	Users []int
}

// ListMounts lists the mounts whose mount point want accepts, in the
// reader's mount namespace and in every other one a process of ns is in
// (a daemon's private namespace holds mounts the host's table does not
// show), each namespace read once through its lowest PID's mountinfo.
func ListMounts(procRoot string, ns Namespaces, want func(point string) bool) ([]MountEntry, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	var out []MountEntry
	var errs []error
	read := func(pid int, mnt uint64) {
		src := filepath.Join(procRoot, "self", "mountinfo")
		if pid != 0 {
			src = filepath.Join(procRoot, strconv.Itoa(pid), "mountinfo")
		}
		data, err := os.ReadFile(src)
		if err != nil {
			if pid == 0 {
				errs = append(errs, fmt.Errorf("read mounts: %w", err))
			}
			return // a process gone since the namespaces were read
		}
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			e, err := parseMountInfoLine(string(line))
			if err != nil || !want(e.mountPoint) {
				continue
			}
			out = append(out, MountEntry{Point: e.mountPoint, FSType: e.fsType, Source: e.source, MntNS: mnt, PID: pid,
				Users: MountUsers(procRoot, ns.Mnt[mnt], e.mountPoint)})
		}
	}
	read(0, ns.SelfMnt)
	for _, mnt := range slices.Sorted(maps.Keys(ns.Mnt)) {
		if mnt != ns.SelfMnt && len(ns.Mnt[mnt]) > 0 {
			read(ns.Mnt[mnt][0], mnt)
		}
	}
	return out, errors.Join(errs...)
}

// MountUsers returns those of pids whose working or root directory is at
// or below point.
func MountUsers(procRoot string, pids []int, point string) []int {
	if procRoot == "" {
		procRoot = "/proc"
	}
	var out []int
	for _, pid := range pids {
		for _, l := range []string{"cwd", "root"} {
			t, err := os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), l))
			if err == nil && under(t, point) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// under reports whether p is dir or below it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// MountsUnder returns the mount points in the reader's mount namespace at
// or below dir: a directory with a mount below it must not be removed
// recursively (the removal would go on into the mounted file system).
func MountsUnder(procRoot, dir string) ([]string, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	data, err := os.ReadFile(filepath.Join(procRoot, "self", "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	var out []string
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		e, err := parseMountInfoLine(string(line))
		if err != nil {
			return nil, fmt.Errorf("read mounts: %w", err)
		}
		if under(e.mountPoint, dir) {
			out = append(out, e.mountPoint)
		}
	}
	return out, nil
}
