package proc

import (
	"errors"
	"io/fs"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Direct system calls for the files a scan reads per process.
//
// os.Open and os.ReadFile cost about nine system calls per file here
// (openat, fstat, an epoll registration attempt, reads until EOF, close),
// against three for open/read/close, and every system call costs about a
// microsecond on 2-core VMs. Over 10,000 processes and several
// files each that is the difference between the cold-scan target and
// twice it, so the per-process reads go through golang.org/x/sys/unix into
// buffers the scanner reuses.

// cpath is a path ending in NUL, as open(2) and readlink(2) take it, built
// in a buffer its owner reuses. x/sys/unix copies a Go string into a fresh
// NUL-terminated slice on every call: a cold scan opens four or five files
// per process, and at 10,000 processes those copies and the path strings
// were 2 MB of its 17 MB of garbage.
type cpath []byte

// appendCPath appends dir, name and a NUL to buf[:0].
func appendCPath(buf []byte, dir []byte, name string) cpath {
	return append(append(append(buf[:0], dir...), name...), 0)
}

// cpathOf copies path into a cpath of its own, for the callers that read
// one file now and then.
func cpathOf(path string) cpath { return append([]byte(path), 0) }

func (p cpath) String() string { return string(p[:len(p)-1]) }

// atFDCWD is AT_FDCWD (-100) as a variable, for a uintptr conversion.
var atFDCWD = unix.AT_FDCWD

// Raw system calls.
//
// An ordinary system call (syscall.Syscall) tells the Go scheduler that
// the goroutine may block: it wakes sysmon from its deep sleep, sysmon then
// polls every 20 µs while the process runs, and a call still under way at
// a poll loses its processor to a thread started to run other goroutines
// meanwhile (runtime.retake), which the call must then win back. A raw one
// (RawSyscall) is, to the scheduler, plain computation. Per process, a
// scan makes several calls of a few microseconds each; made raw, `sandtop
// list` used about 5% less CPU (docs/performance.md, "Raw system calls").
//
// So the calls on procfs and cgroupfs that wait on no other process and
// no device are raw: opening, closing and listing (openat, close,
// getdents64), reading a process's links (readlinkat), and pread of a
// held descriptor (see preadOnce). Reads through read(2) stay ordinary:
// readOnce also reads cmdline, which takes the process's mmap lock and so
// may wait as long as the process's memory is busy. Every path given to
// these is on procfs, sysfs or cgroupfs (or, in tests, a local directory
// of fixtures); never one a sandbox controls, which could sit on FUSE and
// never answer.

// openRead opens path read-only, close-on-exec, so that a child that
// sandtop starts never inherits the descriptors a scan holds.
func openRead(path string) (int, error) { return openReadC(cpathOf(path)) }

// openReadC is openRead for a cpath. It is a raw system call (see above).
func openReadC(p cpath) (int, error) {
	fd, errno := rawCall(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&p[0])),
		unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if errno != 0 {
		return -1, &fs.PathError{Op: "open", Path: p.String(), Err: errno}
	}
	return int(fd), nil
}

// rawCall makes a raw system call (see above), restarted after EINTR.
func rawCall(trap, a1, a2, a3, a4 uintptr) (uintptr, unix.Errno) {
	for {
		r, _, errno := unix.RawSyscall6(trap, a1, a2, a3, a4, 0, 0)
		if errno != unix.EINTR {
			return r, errno
		}
	}
}

// closeFD closes a descriptor openReadC opened, as a raw system call (see
// above): closing a procfs or cgroupfs file releases its seq_file and
// flushes nothing.
func closeFD(fd int) {
	// close(2) must not be retried after EINTR: the descriptor is gone.
	_, _, _ = unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

// getdents is getdents64(2) into buf, as a raw system call (see above).
func getdents(fd int, buf []byte) (int, error) {
	n, errno := rawCall(unix.SYS_GETDENTS64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// readOnce is one read(2), restarted after EINTR.
//
// The per-process procfs files (stat, status, cgroup: seq_files of one
// record made with single_open, fs/proc/base.c; cmdline, which copies up
// to the count asked, get_mm_cmdline) and the cgroupfs state files render
// whole into a buffer large enough for them, so a read shorter than the
// buffer is the end of the file. Reading on until read returns 0, as
// os.ReadFile does, would cost one more system call per file: a second
// pread for every process of every refresh.
func readOnce(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Read(fd, buf)
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// preadOnce is one pread(2) at offset 0, for a descriptor that is read
// again and again: a seq_file regenerates its text when read from offset 0
// (fs/seq_file.c, seq_read_iter), so a held descriptor shows the current
// values without a new open. See readOnce for why one read is enough.
//
// It is a raw system call (see above): the held files (a process's stat,
// cgroup state, usage and resource files) render in microseconds and wait
// on no other process (stat takes no mmap lock, unlike cmdline).
func preadOnce(fd int, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	// Offset 0 reads the same on every ABI, split or padded.
	n, errno := rawCall(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// readFileInto reads a whole file into *buf, growing it (up to max bytes)
// when the file does not fit, and returns the bytes read: os.ReadFile for a
// caller that reads thousands of small files, with one buffer. A file of
// one record (see readOnce) ends at the first short read; other files
// (/proc/net/unix, whose seq_file returns about a page a read) are read
// until read returns 0.
func readFileInto(path string, buf *[]byte, max int, oneRecord bool) ([]byte, error) {
	return readFileC(cpathOf(path), buf, max, oneRecord)
}

// readFileC is readFileInto for a cpath.
func readFileC(p cpath, buf *[]byte, max int, oneRecord bool) ([]byte, error) {
	fd, err := openReadC(p)
	if err != nil {
		return nil, err
	}
	defer closeFD(fd)
	n := 0
	for {
		if n == len(*buf) {
			if n >= max {
				return (*buf)[:n], nil
			}
			grown := make([]byte, min(2*len(*buf), max))
			copy(grown, (*buf)[:n])
			*buf = grown
		}
		m, err := readOnce(fd, (*buf)[n:])
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: p.String(), Err: err}
		}
		n += m
		if m == 0 || (oneRecord && n < len(*buf)) {
			return (*buf)[:n], nil
		}
	}
}

// readlinkInto is os.Readlink into a reused buffer. procfs symlinks
// (exe, cwd) are at most a page: d_path fails beyond that. It is a raw
// system call (see above): resolving them takes the process's task lock,
// never its memory map.
func readlinkInto(p cpath, buf []byte) (string, error) {
	n, errno := rawCall(unix.SYS_READLINKAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&p[0])),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	switch {
	case errno != 0:
		return "", &fs.PathError{Op: "readlink", Path: p.String(), Err: errno}
	case int(n) >= len(buf):
		return "", &fs.PathError{Op: "readlink", Path: p.String(), Err: unix.ENAMETOOLONG}
	}
	return string(buf[:n]), nil
}
