package proc

import (
	"errors"
	"io/fs"

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

// openRead opens path read-only, close-on-exec, so that a child that
// sandtop starts never inherits the descriptors a scan holds.
func openRead(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
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
func preadOnce(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Pread(fd, buf, 0)
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// readFileInto reads a whole file into *buf, growing it (up to max bytes)
// when the file does not fit, and returns the bytes read: os.ReadFile for a
// caller that reads thousands of small files, with one buffer. A file of
// one record (see readOnce) ends at the first short read; other files
// (/proc/net/unix, whose seq_file returns about a page a read) are read
// until read returns 0.
func readFileInto(path string, buf *[]byte, max int, oneRecord bool) ([]byte, error) {
	fd, err := openRead(path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
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
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		n += m
		if m == 0 || (oneRecord && n < len(*buf)) {
			return (*buf)[:n], nil
		}
	}
}

// readlinkInto is os.Readlink into a reused buffer. procfs symlinks
// (exe, cwd) are at most a page: d_path fails beyond that.
func readlinkInto(path string, buf []byte) (string, error) {
	for {
		n, err := unix.Readlink(path, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: path, Err: err}
		}
		if n >= len(buf) {
			return "", &fs.PathError{Op: "readlink", Path: path, Err: unix.ENAMETOOLONG}
		}
		return string(buf[:n]), nil
	}
}
