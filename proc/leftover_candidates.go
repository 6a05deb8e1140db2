package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// PathKind says what a path found on the host is.
type PathKind string

// The kinds of path a leftover can be.
const (
	KindDir    PathKind = "dir"
	KindSocket PathKind = "socket"
	KindFile   PathKind = "file"
	KindCgroup PathKind = "cgroup"
)

// PathEntry is one filesystem entry a glob found.
type PathEntry struct {
	Path string
	Kind PathKind
	// ModTime is the entry's mtime (lstat: a symlink's own).
	ModTime time.Time
}

// CgroupDir is one cgroup directory.
type CgroupDir struct {
	// Path is the cgroup path as /proc/PID/cgroup names it.
	Path string
	// Dir is where it lives in the cgroupfs.
	Dir string
	// V1 is set for a v1 freezer cgroup (hosts without cgroup2).
	V1 bool
	// ModTime is the directory's mtime: kernfs sets it when the cgroup is
	// made and when a child cgroup is made or removed.
	ModTime time.Time
	// Populated is true when a process lives in the cgroup or below it
	// (cgroup.events "populated 1" on v2; a non-empty cgroup.procs in the
	// subtree on v1), or when that could not be read: an unknown is never
	// taken for empty.
	Populated bool
}

// maxGlobHits bounds what one pattern may yield, so a pattern that turns
// out far broader than meant (a directory of millions of files) costs a
// bounded read rather than the host's memory.
const maxGlobHits = 10000

// ErrBroadGlob is returned for a pattern that would list the root
// directory: sandtop never globs "/".
var ErrBroadGlob = errors.New("pattern would glob the root directory")

// Glob returns the entries matching each pattern (filepath.Match syntax),
// sorted and without duplicates. A pattern whose first component is a
// wildcard is refused: sandtop never lists "/". A directory that does not
// exist yields nothing; that is not an error.
func Glob(patterns []string) ([]PathEntry, error) {
	var out []PathEntry
	seen := map[string]bool{}
	var errs []error
	for _, pat := range patterns {
		if err := checkGlob(pat); err != nil {
			errs = append(errs, fmt.Errorf("glob %q: %w", pat, err))
			continue
		}
		hits, err := filepath.Glob(pat)
		if err != nil {
			errs = append(errs, fmt.Errorf("glob %q: %w", pat, err))
			continue
		}
		if len(hits) > maxGlobHits {
			errs = append(errs, fmt.Errorf("glob %q: %d entries, only the first %d looked at", pat, len(hits), maxGlobHits))
			hits = hits[:maxGlobHits]
		}
		for _, h := range hits {
			if seen[h] {
				continue
			}
			fi, err := os.Lstat(h)
			if err != nil {
				continue // gone since the listing: normal
			}
			seen[h] = true
			out = append(out, PathEntry{Path: h, Kind: kindOf(fi.Mode()), ModTime: fi.ModTime()})
		}
	}
	slices.SortFunc(out, func(a, b PathEntry) int { return strings.Compare(a.Path, b.Path) })
	return out, errors.Join(errs...)
}

// checkGlob refuses relative patterns and patterns that would list "/".
func checkGlob(pat string) error {
	if !filepath.IsAbs(pat) {
		return errors.New("not an absolute path")
	}
	first := strings.SplitN(strings.TrimPrefix(pat, "/"), "/", 2)[0]
	if first == "" || strings.ContainsAny(first, `*?[\`) {
		return ErrBroadGlob
	}
	return nil
}

func kindOf(m fs.FileMode) PathKind {
	switch {
	case m.IsDir():
		return KindDir
	case m&fs.ModeSocket != 0:
		return KindSocket
	}
	return KindFile
}

// maxCgroupDepth bounds the cgroup walk; the deepest cgroups sandboxes
// use (a rootless box under user.slice/user-U.slice/user@U.service/…, a
// pod's container under kubepods…) sit well above it.
const maxCgroupDepth = 12

// maxCgroupDirs bounds the directories one walk visits.
const maxCgroupDirs = 100000

// ListCgroups walks the cgroup v2 hierarchy (the v1 freezer hierarchy on
// hosts without cgroup2) and returns the directories want accepts, with
// their state. It does not descend into an accepted directory: what is
// below it is part of it. want sees cgroup paths as /proc/PID/cgroup
// writes them. No mounted hierarchy yields nothing.
func ListCgroups(m Mounts, want func(cgroupPath string) bool) ([]CgroupDir, error) {
	mount, root, v1 := m.Unified, m.UnifiedRoot, false
	if mount == "" {
		mount, root, v1 = m.Freezer, m.FreezerRoot, true
	}
	if mount == "" {
		return nil, nil
	}
	if root == "" {
		root = "/"
	}
	var out []CgroupDir
	visited := 0
	err := filepath.WalkDir(mount, func(dir string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if visited++; visited > maxCgroupDirs {
			return fmt.Errorf("more than %d cgroups: walk stopped", maxCgroupDirs)
		}
		rel, _ := filepath.Rel(mount, dir)
		if rel != "." && strings.Count(rel, "/")+1 > maxCgroupDepth {
			return fs.SkipDir
		}
		cg := path.Join(root, rel)
		if rel == "." || !want(cg) {
			return nil
		}
		c := CgroupDir{Path: cg, Dir: dir, V1: v1, Populated: true}
		if fi, err := d.Info(); err == nil {
			c.ModTime = fi.ModTime()
		}
		var exists bool
		if c.Populated, exists = populated(dir, v1); exists {
			out = append(out, c)
		}
		return fs.SkipDir
	})
	if err != nil {
		return out, fmt.Errorf("walk cgroups under %s: %w", mount, err)
	}
	return out, nil
}

// RecheckCgroups reads again the state of the directories a ListCgroups
// found, without walking the hierarchy again, and leaves out those removed
// since. vouched, when it reports true for a cgroup path, says the caller
// saw a process in it or below just now, which saves the read.
func RecheckCgroups(dirs []CgroupDir, vouched func(cgroupPath string) bool) []CgroupDir {
	out := make([]CgroupDir, 0, len(dirs))
	for _, c := range dirs {
		if vouched(c.Path) {
			c.Populated = true
			out = append(out, c)
			continue
		}
		var exists bool
		if c.Populated, exists = populated(c.Dir, c.V1); exists {
			out = append(out, c)
		}
	}
	return out
}

// populated reports whether a process lives in dir or below (an unreadable
// answer counts as populated), and whether dir still exists.
func populated(dir string, v1 bool) (busy, exists bool) {
	if !v1 {
		st, err := ReadCgroupState(dir, false)
		return err != nil || st.Populated, err != nil || st.Exists
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		pids, err := ReadCgroupProcs(p)
		if err != nil || len(pids) > 0 {
			busy = true
			return fs.SkipAll
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return false, false
	}
	return busy || err != nil, true
}
