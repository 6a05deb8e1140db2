package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// The cold path: the files read once per identity (cmdline, exe, cwd,
// status, cgroup). They are read with open/read/close into a reused buffer
// and parsed here, not through procfs, whose CmdLine, NewStatus (which
// parses all ~55 lines of status into a struct) and Cgroups cost about nine
// system calls a file and dozens of allocations: at 10,000 processes the
// procfs-based cold scan took 1.97 s, 212 MB and 2.4 million allocations;
// this one takes 0.80 s, 21 MB and 258,000 on one goroutine, 0.42 s on two
// (BenchmarkScanCold). Only two lines of status matter (Uid, NSpid) and two
// of cgroup (the v2 line and the v1 freezer), so the parsers below look at
// nothing else. What remains is kernel time: per process, status ~13 µs,
// cgroup ~9, stat ~8, cmdline ~5, the exe and cwd links ~2.5 each.

// maxCmdline bounds the other files read here (status, cgroup), as
// procfs does (its ReadFileNoStat reads at most 1 MiB).
const maxCmdline = 1 << 20

// MaxArgvBytes bounds the command line kept of a process: the rest is
// never read, and Process.ArgvCut says so. argv can reach a quarter of
// the stack limit (2 MiB with the usual 8 MiB, and one argument 128 KiB),
// all of it chosen by the process, and a scan keeps it for every process
// on the host. 64 KiB is ten times a libvirt QEMU command line, the
// longest of the runtimes' here; sandtop matches on the first few
// arguments, and a screen row shows one line of it.
const MaxArgvBytes = 64 << 10

// staticReader reads the static fields of processes. It holds the buffers
// of one goroutine; a scan runs one per worker (see Scanner.readStatics).
type staticReader struct {
	buf  []byte
	link []byte
	stat []byte
	n    readCounts
	// dir is the process directory being read, with a trailing slash;
	// file holds the path of the file being read in it.
	dir, file []byte
	// strings shares the cgroup paths this reader read alike (see
	// interner), so that only the first process of a cgroup allocates its
	// path.
	strings interner
	// missing is set when a file of the process being read was missing.
	missing bool
	// probe is the Process handed to a lazy scan's Need.
	probe Process
}

func newStaticReader() *staticReader {
	return &staticReader{
		buf:  make([]byte, 4096),
		link: make([]byte, unixPathMax),
		stat: make([]byte, statBufSize),
	}
}

// unixPathMax is PATH_MAX: d_path, which renders the exe and cwd links,
// fails with ENAMETOOLONG beyond it.
const unixPathMax = 4096

// read reads the static fields of the process whose stat is st, from
// root/PID: cmdline and cgroup always, then exe, cwd and status as need
// asks for them (all of them when need is nil; see Options.Need). It
// reports gone when the process vanished meanwhile (or its pid was
// reused), in which case the process must be left out of the scan.
//
// Each field is read on its own so that one failure costs only that field:
// a permission error (exe and cwd need ptrace access, proc(5)) or a parse
// error leaves it empty and sets partial. A missing file is ambiguous: the
// process may have exited, or the file may simply not exist (a fixture, an
// old kernel). A second read of stat tells them apart: if the same identity
// is still there, the file was missing and the field stays empty.
func (r *staticReader) read(root string, st *pidStat, kernel bool, m Mounts, need func(*Process) Fields) (static, bool) {
	sf := static{uid: -1}
	if kernel {
		// Kernel threads have no argv, exe, cwd or cgroup of interest, and run
		// as root in the initial namespaces, so status is not worth a read.
		sf.uid = 0
		return sf, false
	}
	r.begin(root, st.pid)
	if !st.exited() {
		// A zombie has released its memory and files: cmdline reads empty and
		// exe/cwd do not resolve (ENOENT), which would look like a vanished
		// process. Skip them rather than mistake the one for the other.
		var err error
		sf.argv, sf.argvCut, err = r.readArgv()
		r.note(&sf, err)
		sf.argvLate = err == nil && sf.argv == nil
	}
	var err error
	sf.cgroup, sf.freezer, err = r.readCgroups(m)
	r.note(&sf, err)
	sf.unread = AllFields
	r.details(st, &sf, need)
	if r.missing {
		if !r.sameProcess(st) {
			return static{}, true
		}
		sf.partial = true
	}
	return sf, false
}

// details reads the fields of sf that are still unread and that need asks
// for (all of them when need is nil), asking again after each round: what
// a rule needs can depend on what was just read. st and sf must have been
// read from r.dir.
func (r *staticReader) details(st *pidStat, sf *static, need func(*Process) Fields) {
	for sf.unread != 0 {
		want := sf.unread
		if need != nil {
			fillProcess(&r.probe, st, sf, false, 0)
			if want &= need(&r.probe); want == 0 {
				break
			}
		}
		sf.unread &^= want
		alive := !st.exited()
		if want&FieldExe != 0 && alive {
			var err error
			r.n.exe++
			sf.exe, err = r.readlink(r.path("exe"))
			r.note(sf, err)
		}
		if want&FieldCwd != 0 && alive {
			var err error
			r.n.cwd++
			sf.cwd, err = r.readlink(r.path("cwd"))
			r.note(sf, err)
		}
		if want&FieldStatus != 0 {
			r.n.status++
			sf.uid, sf.nspid = -1, nil
			b, err := readFileC(r.path("status"), &r.buf, maxCmdline, true)
			if err == nil {
				sf.uid, sf.nspid, err = ParseStatusIDs(b)
			}
			r.note(sf, err)
		}
	}
	if sf.unread&FieldStatus != 0 {
		sf.uid = 0 // "not read", not the -1 of "unreadable"
	}
	r.probe = Process{}
}

// note records how one read went: a vanished file is set aside for
// sameProcess to judge, any other failure marks the process partial.
func (r *staticReader) note(sf *static, err error) {
	switch {
	case err == nil:
	case IsVanished(err):
		r.missing = true
	default:
		sf.partial = true
	}
}

// readArgv reads the argv of the process being read (see begin).
func (r *staticReader) readArgv() ([]string, bool, error) {
	r.n.cmdline++
	b, err := readFileC(r.path("cmdline"), &r.buf, MaxArgvBytes+1, true)
	cut := len(b) > MaxArgvBytes
	if cut {
		b = b[:MaxArgvBytes]
	}
	return parseCmdline(b), cut, err
}

// readCgroups reads the v2 cgroup and v1 freezer paths of the process
// being read.
func (r *staticReader) readCgroups(m Mounts) (v2, freezer string, err error) {
	r.n.cgroup++
	b, err := readFileC(r.path("cgroup"), &r.buf, maxCmdline, true)
	if err != nil {
		return "", "", err
	}
	v2b, freezerb, err := cgroupPathBytes(b, m)
	return r.strings.internBytes(v2b), r.strings.internBytes(freezerb), err
}

// sameProcess reads stat again after a file went missing: true when the
// same identity is still there (the file simply does not exist, and the
// process is partial), false when the process is gone or its pid reused.
func (r *staticReader) sameProcess(st *pidStat) bool {
	r.n.stat++
	var again procfs.ProcStat
	return readStatFile(r.path("stat"), r.stat, &again) == nil && again.Starttime == st.start
}

// begin starts reading the process directory root/PID.
func (r *staticReader) begin(root string, pid int) {
	r.dir = append(append(r.dir[:0], root...), '/')
	r.dir = strconv.AppendInt(r.dir, int64(pid), 10)
	r.dir = append(r.dir, '/')
	r.missing = false
}

// path is the file name in the process directory being read. It is valid
// until the next call.
func (r *staticReader) path(name string) cpath {
	r.file = appendCPath(r.file, r.dir, name)
	return r.file
}

// readlink reads a /proc/PID symlink. A missing link reads as "" without
// error, as procfs's Executable and Cwd have it: a kernel thread or an
// exiting process has none, which is no failure.
func (r *staticReader) readlink(path cpath) (string, error) {
	s, err := readlinkInto(path, r.link)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return s, err
}

// parseCmdline splits /proc/PID/cmdline on NUL, as procfs's CmdLine does:
// trailing NULs are dropped, empty arguments inside are kept, and an empty
// file (a kernel thread, a process that emptied its argv) gives nil. The
// arguments share one string allocation.
func parseCmdline(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
}

// ParseStatusIDs picks the real uid (first number of the Uid: line) and the
// NSpid: line out of /proc/PID/status (proc(5)). A status without NSpid
// (kernels before 4.1) gives nil.
func ParseStatusIDs(b []byte) (uid int, nspid []int, err error) {
	uid = -1
	for line := range bytes.Lines(b) {
		key, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		switch string(key) {
		case "Uid":
			// FieldsSeq, not Fields: no slice of fields per process.
			var first []byte
			for f := range bytes.FieldsSeq(value) {
				first = f
				break
			}
			if first == nil {
				return -1, nil, fmt.Errorf("status: empty Uid line")
			}
			v, ok := parseUint(first)
			if !ok || v > math.MaxUint32 { // uid_t
				return -1, nil, fmt.Errorf("status: Uid %q", first)
			}
			uid = int(v)
		case "NSpid":
			n := 0
			for range bytes.FieldsSeq(value) {
				n++
			}
			nspid = make([]int, 0, n)
			for f := range bytes.FieldsSeq(value) {
				v, ok := parseUint(f)
				if !ok || v == 0 || v > math.MaxInt32 { // a pid_t, and never 0
					return -1, nil, fmt.Errorf("status: NSpid %q", f)
				}
				nspid = append(nspid, int(v))
			}
		}
	}
	return uid, nspid, nil
}

// cgroupPathBytes picks the v2 path (the "0::" line, cgroups(7)) and the
// v1 freezer path out of /proc/PID/cgroup, left in b. A hierarchy that is
// not mounted gives none: on a v1-only host every process still shows
// "0::/", which means nothing. Lines are
// "hierarchy-ID:controller-list:cgroup-path"; the path may itself hold ':'.
func cgroupPathBytes(b []byte, m Mounts) (v2, freezer []byte, err error) {
	for line := range bytes.Lines(b) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) == 0 {
			continue
		}
		id, rest, ok1 := bytes.Cut(line, []byte(":"))
		controllers, path, ok2 := bytes.Cut(rest, []byte(":"))
		if !ok1 || !ok2 {
			return nil, nil, fmt.Errorf("cgroup: line %q: want id:controllers:path", line)
		}
		hierarchy, ok := parseUint(id)
		if !ok {
			return nil, nil, fmt.Errorf("cgroup: hierarchy ID %q", id)
		}
		switch {
		case hierarchy == 0 && len(controllers) == 0:
			if m.Unified != "" {
				v2 = path
			}
		case hasController(controllers, "freezer"):
			if m.Freezer != "" {
				freezer = path
			}
		}
	}
	return v2, freezer, nil
}

// hasController reports whether a comma-separated controller list holds name.
func hasController(list []byte, name string) bool {
	for c := range bytes.SplitSeq(list, []byte(",")) {
		if string(c) == name {
			return true
		}
	}
	return false
}
