package proc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// PathKind says what a path found on the host is.
type PathKind string

// The kinds of path a leftover can be.
const (
	KindDir    PathKind = "dir"
	KindSocket PathKind = "socket"
	KindFile   PathKind = "file"
	KindCgroup PathKind = "cgroup"
	KindNetns  PathKind = "netns"
	KindLink   PathKind = "link"
	KindMount  PathKind = "mount"
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
	// V1 is set for a v1 cgroup (the freezer's on hosts without cgroup2).
	V1 bool
	// Hierarchy names the hierarchy when a cgroup template found it in
	// one of several ("" for the walk of the one hierarchy).
	Hierarchy string
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
// hosts without cgroup2) and returns the directories want takes, with
// their state, in lexical order, each before those below it. It does not
// descend into a taken directory, since what is below it is part of it,
// unless want says to (a caller that can only settle later whether it
// takes it). want sees cgroup paths as /proc/PID/cgroup writes them. No
// mounted hierarchy yields nothing. vouched, as for RecheckCgroups, may
// be nil.
func ListCgroups(m Mounts, want func(cgroupPath string) (take, descend bool), vouched func(cgroupPath string) bool) ([]CgroupDir, error) {
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
	if vouched == nil {
		vouched = func(string) bool { return false }
	}
	w := cgroupWalk{want: want, vouched: vouched, v1: v1, buf: make([]byte, 8<<10)}
	if err := w.walk(mount, root, 0); err != nil {
		return w.out, fmt.Errorf("walk cgroups under %s: %w", mount, err)
	}
	return w.out, nil
}

// cgroupWalk is one ListCgroups. It reads each directory's entries itself
// into one buffer: a cgroup directory holds a few dozen control files and
// perhaps a few children, and filepath.WalkDir made an entry and a joined
// path for every file. At a thousand containers' scopes that was 3 MB of
// a one-shot list's memory, for the directories alone that it keeps.
type cgroupWalk struct {
	want    func(string) (take, descend bool)
	vouched func(string) bool
	v1      bool
	buf     []byte
	visited int
	out     []CgroupDir
}

// walk visits the directories below dir, whose cgroup path is cg and
// which is depth levels below the mount.
func (w *cgroupWalk) walk(dir, cg string, depth int) error {
	if depth == maxCgroupDepth {
		return nil
	}
	names, err := subdirs(dir, w.buf)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed while we walked
	}
	if err != nil {
		return err
	}
	for _, name := range names {
		if w.visited++; w.visited > maxCgroupDirs {
			return fmt.Errorf("more than %d cgroups: walk stopped", maxCgroupDirs)
		}
		d, c := dir+"/"+name, path.Join(cg, name)
		take, descend := w.want(c)
		if take {
			w.take(d, c)
		}
		if !take || descend {
			if err := w.walk(d, c, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// take adds the cgroup c at dir to what the walk found, with its state,
// unless it is gone.
func (w *cgroupWalk) take(dir, c string) {
	found := CgroupDir{Path: c, Dir: dir, V1: w.v1}
	var st unix.Stat_t
	if unix.Lstat(dir, &st) == nil {
		found.ModTime = time.Unix(st.Mtim.Unix())
	}
	if found, exists := withState(found, w.vouched); exists {
		w.out = append(w.out, found)
	}
}

// subdirs lists the directories in dir (not following symbolic links),
// sorted, reading its entries with getdents(2) into buf.
func subdirs(dir string, buf []byte) ([]string, error) {
	fd, err := openRead(dir)
	if err != nil {
		return nil, err
	}
	defer closeFD(fd)
	var names []string
	for {
		n, err := getdents(fd, buf)
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if n <= 0 {
			break
		}
		names = appendSubdirs(names, fd, buf[:n])
	}
	slices.Sort(names)
	return names, nil
}

// appendSubdirs appends the directories among the linux_dirent64 records
// in b, read from the directory open at fd. A file system that does not
// fill in d_type (DT_UNKNOWN) costs an fstatat of the entry.
func appendSubdirs(names []string, fd int, b []byte) []string {
	// struct linux_dirent64: d_ino (8 bytes), d_off (8), d_reclen (2),
	// d_type (1), then d_name, NUL-terminated.
	const nameOff = 19
	for len(b) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < nameOff || reclen > len(b) {
			break
		}
		typ, name := b[18], b[nameOff:reclen]
		b = b[reclen:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if string(name) == "." || string(name) == ".." {
			continue
		}
		switch typ {
		case unix.DT_DIR:
		case unix.DT_UNKNOWN:
			var st unix.Stat_t
			if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
				continue
			}
		default:
			continue
		}
		names = append(names, string(name))
	}
	return names
}

// RecheckCgroups reads again the state of the directories a ListCgroups
// found, without walking the hierarchy again, and leaves out those removed
// since. vouched, when it reports true for a cgroup path, says the caller
// saw a process in it or below just now, which saves the read.
func RecheckCgroups(dirs []CgroupDir, vouched func(cgroupPath string) bool) []CgroupDir {
	out := make([]CgroupDir, 0, len(dirs))
	for _, c := range dirs {
		if c, exists := withState(c, vouched); exists {
			out = append(out, c)
		}
	}
	return out
}

// withState sets c's Populated, reading it only where vouched does not
// answer for it, and reports whether c still exists. A sandbox's own
// cgroup, with its processes in it, costs no read: a thousand containers'
// scopes were as many reads of cgroup.events (on v1, of cgroup.procs in
// each cgroup below).
func withState(c CgroupDir, vouched func(cgroupPath string) bool) (CgroupDir, bool) {
	if vouched(c.Path) {
		c.Populated = true
		return c, true
	}
	var exists bool
	c.Populated, exists = populated(c.Dir, c.V1)
	return c, exists
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
