package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Hierarchy is one mounted cgroup hierarchy: cgroup2, or a v1 hierarchy
// of one or more controllers.
type Hierarchy struct {
	MountPoint, Root string
	V1               bool
	// Name is what to call it: the mount point's last component (cpu,
	// memory, unified, …).
	Name string
}

// FindHierarchies lists every cgroup hierarchy mounted in the text of a
// mountinfo file, each once: a hierarchy mounted twice (its options are
// the same) is listed by its mount of the root, else its first.
func FindHierarchies(mountinfo []byte) []Hierarchy {
	var out []Hierarchy
	at := map[string]int{}
	for line := range bytes.SplitSeq(mountinfo, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		e, err := parseMountInfoLine(string(line))
		if err != nil || (e.fsType != "cgroup" && e.fsType != "cgroup2") {
			continue
		}
		h := Hierarchy{MountPoint: e.mountPoint, Root: e.root, V1: e.fsType == "cgroup", Name: path.Base(e.mountPoint)}
		key := e.fsType + " " + e.superOptions
		if i, ok := at[key]; ok {
			if out[i].Root != "/" && e.root == "/" {
				out[i] = h
			}
			continue
		}
		at[key] = len(out)
		out = append(out, h)
	}
	return out
}

// ReadHierarchies is FindHierarchies of <procRoot>/self/mountinfo.
func ReadHierarchies(procRoot string) ([]Hierarchy, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	data, err := os.ReadFile(filepath.Join(procRoot, "self", "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("read cgroup hierarchies: %w", err)
	}
	return FindHierarchies(data), nil
}

// GlobCgroups returns the cgroups, in every hierarchy of hs, whose path
// (as /proc/PID/cgroup writes it) a pattern matches (filepath.Match
// syntax), with their state. A pattern that would list a hierarchy's
// root directory is refused, as Glob refuses "/".
func GlobCgroups(hs []Hierarchy, patterns []string) ([]CgroupDir, error) {
	var out []CgroupDir
	var errs []error
	for _, pat := range patterns {
		if err := checkGlob(pat); err != nil {
			errs = append(errs, fmt.Errorf("cgroup glob %q: %w", pat, err))
			continue
		}
		for _, h := range hs {
			dirPat := cgroupDir(h.MountPoint, h.Root, pat)
			if dirPat == "" {
				continue
			}
			hits, err := filepath.Glob(dirPat)
			if err != nil {
				errs = append(errs, fmt.Errorf("cgroup glob %q: %w", pat, err))
				continue
			}
			if len(hits) > maxGlobHits {
				errs = append(errs, fmt.Errorf("cgroup glob %q in %s: %d entries, only the first %d looked at", pat, h.MountPoint, len(hits), maxGlobHits))
				hits = hits[:maxGlobHits]
			}
			for _, d := range hits {
				var st unix.Stat_t
				if unix.Lstat(d, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
					continue
				}
				rel := strings.TrimPrefix(d, h.MountPoint)
				c := CgroupDir{Path: path.Join(h.Root, "/"+rel), Dir: d, V1: h.V1, Hierarchy: h.Name, ModTime: time.Unix(st.Mtim.Unix())}
				var exists bool
				if c.Populated, exists = populated(d, h.V1); exists {
					out = append(out, c)
				}
			}
		}
	}
	return out, errors.Join(errs...)
}
