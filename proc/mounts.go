package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// FindMounts locates the cgroup2 mount and the v1 freezer mount in the text
// of a mountinfo file (proc(5), /proc/PID/mountinfo). A hierarchy that is not
// mounted leaves its fields empty; that is not an error. When a hierarchy is
// mounted more than once, a mount of the hierarchy's root ("/") wins over a
// bind mount of a subtree, and otherwise the first mount wins.
//
// procfs has a mountinfo parser, but it only reads files (its byte parser is
// unexported), so this small one keeps FindMounts pure.
func FindMounts(mountinfo []byte) (Mounts, error) {
	var m Mounts
	for n, line := range bytes.Split(mountinfo, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := parseMountInfoLine(string(line))
		if err != nil {
			return Mounts{}, fmt.Errorf("mountinfo line %d: %w", n+1, err)
		}
		switch {
		case e.fsType == "cgroup2":
			if m.Unified == "" || (m.UnifiedRoot != "/" && e.root == "/") {
				m.Unified, m.UnifiedRoot = e.mountPoint, e.root
			}
		case e.fsType == "cgroup" && hasOption(e.superOptions, "freezer"):
			if m.Freezer == "" || (m.FreezerRoot != "/" && e.root == "/") {
				m.Freezer, m.FreezerRoot = e.mountPoint, e.root
			}
		}
		if e.fsType == "cgroup" && (e.root == "/" || e.root == "") {
			m.V1.add(e.mountPoint, e.superOptions)
		}
	}
	return m, nil
}

// readMounts reads <procRoot>/self/mountinfo. A missing file means no
// hierarchy is known, which is not an error.
func readMounts(procRoot string) (Mounts, error) {
	data, err := os.ReadFile(filepath.Join(procRoot, "self", "mountinfo"))
	if errors.Is(err, fs.ErrNotExist) {
		return Mounts{}, nil
	}
	if err != nil {
		return Mounts{}, fmt.Errorf("read mountinfo: %w", err)
	}
	m, err := FindMounts(data)
	if err != nil {
		return Mounts{}, fmt.Errorf("parse %s/self/mountinfo: %w", procRoot, err)
	}
	return m, nil
}

// withSysRoot prefixes the mount points with sysRoot, so a fixture tree can
// carry its own fake cgroupfs.
func (m Mounts) withSysRoot(sysRoot string) Mounts {
	if sysRoot == "" {
		return m
	}
	if m.Unified != "" {
		m.Unified = filepath.Join(sysRoot, m.Unified)
	}
	if m.Freezer != "" {
		m.Freezer = filepath.Join(sysRoot, m.Freezer)
	}
	for _, p := range m.V1.points() {
		if *p != "" {
			*p = filepath.Join(sysRoot, *p)
		}
	}
	return m
}

// V2Dir returns the cgroupfs directory of a cgroup v2 path (as in
// Process.Cgroup), or "" when there is no cgroup2 mount or the path cannot be
// reached through it.
func (m Mounts) V2Dir(cgroupPath string) string {
	return cgroupDir(m.Unified, m.UnifiedRoot, cgroupPath)
}

// FreezerDir returns the cgroupfs directory of a v1 freezer path (as in
// Process.Freezer), or "" when there is no freezer mount or the path cannot be
// reached through it.
func (m Mounts) FreezerDir(cgroupPath string) string {
	return cgroupDir(m.Freezer, m.FreezerRoot, cgroupPath)
}

// cgroupDir maps a path from /proc/PID/cgroup onto a mount of its hierarchy.
//
// The path is relative to the reader's cgroup namespace root, and mountinfo's
// root field is relative to the same root (cgroup_namespaces(7)). A process
// outside our cgroup namespace shows up with a path that climbs out of it
// ("/../.."); it has no directory we can see, so "" is returned rather than
// a path that would escape the mount. A mount of a subtree (root field other
// than "/", as in bind-mounted container setups) only reaches paths below that
// subtree.
func cgroupDir(mountPoint, mountRoot, cgroupPath string) string {
	if mountPoint == "" || !strings.HasPrefix(cgroupPath, "/") {
		return ""
	}
	for _, elem := range strings.Split(cgroupPath, "/") {
		if elem == ".." {
			return ""
		}
	}
	rel := path.Clean(cgroupPath)
	if mountRoot != "" && mountRoot != "/" {
		switch {
		case rel == mountRoot:
			rel = "/"
		case strings.HasPrefix(rel, mountRoot+"/"):
			rel = rel[len(mountRoot):]
		default:
			return ""
		}
	}
	return filepath.Join(mountPoint, rel)
}

// mountInfoEntry holds the fields of one mountinfo line that sandtop uses.
type mountInfoEntry struct {
	root, mountPoint, fsType, source, superOptions string
}

// parseMountInfoLine parses one line of mountinfo (proc(5)):
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//	(1)(2)(3)   (4)   (5)      (6)      (7)   (8) (9)   (10)         (11)
//
// Field 7 is zero or more optional fields ended by the "-" separator.
func parseMountInfoLine(line string) (mountInfoEntry, error) {
	fields := strings.Split(line, " ")
	sep := -1
	for i := 6; i < len(fields); i++ {
		if fields[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || len(fields) < sep+4 {
		return mountInfoEntry{}, fmt.Errorf("malformed line %q", line)
	}
	return mountInfoEntry{
		root:         unescapeMountField(fields[3]),
		mountPoint:   unescapeMountField(fields[4]),
		fsType:       fields[sep+1],
		source:       unescapeMountField(fields[sep+2]),
		superOptions: fields[sep+3],
	}, nil
}

// unescapeMountField undoes the kernel's octal escaping of space, tab, newline
// and backslash in mountinfo paths (fs/proc_namespace.c mangle: "\040" etc.).
func unescapeMountField(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

func hasOption(options, want string) bool {
	for _, o := range strings.Split(options, ",") {
		if o == want {
			return true
		}
	}
	return false
}
