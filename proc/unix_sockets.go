package proc

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
)

// soAcceptCon is __SO_ACCEPTCON (include/uapi/linux/net.h), which
// /proc/net/unix prints in the Flags column for a socket in the listening
// state (net/unix/af_unix.c, unix_seq_show).
const soAcceptCon = 1 << 16

// maxNetUnix bounds a read of /proc/net/unix: about 100 bytes a socket, so
// room for over half a million sockets.
const maxNetUnix = 64 << 20

// listenerCache reads /proc/net/unix into a reused buffer and parses it only
// when its text changed since the last read, handing out the same map
// otherwise: a refresh of a host whose sockets did not change allocates
// nothing here. Maps handed out are never modified.
type listenerCache struct {
	buf, last []byte
	m         map[string]bool
}

// read reads the listening sockets of the network namespace of pid (the
// reader's own when pid is 0) under procRoot: <procRoot>/net/unix, or
// <procRoot>/<pid>/net/unix, tells whether they changed, and the kernel's
// sock_diag says which they are where it answers (see unix_diag.go). That
// file shows the sockets of one network namespace only, so a sandbox in
// its own keeps its listeners out of the reader's sight. A missing or
// unreadable file is an error: the caller must not take "cannot tell"
// for "nothing listens".
func (c *listenerCache) read(procRoot string, pid int) (map[string]bool, error) {
	if c.buf == nil {
		c.buf = make([]byte, 16<<10)
	}
	dir := procRoot
	if pid > 0 {
		dir = filepath.Join(procRoot, strconv.Itoa(pid))
	}
	path := filepath.Join(dir, "net", "unix")
	data, err := readFileInto(path, &c.buf, maxNetUnix, false)
	if err != nil {
		c.m, c.last = nil, c.last[:0]
		return nil, fmt.Errorf("read unix sockets: %w", err)
	}
	if c.m != nil && bytes.Equal(data, c.last) {
		return c.m, nil
	}
	l := map[string]bool{}
	text := func() ([]byte, error) { return data, nil }
	if err := eachUnixListenerOf(procRoot, pid, text, func(_, path []byte) { l[string(path)] = true }); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	c.m, c.last = l, append(c.last[:0], data...)
	return l, nil
}

// eachUnixListenerOf calls fn with the inode and the path of each
// listening unix socket of pid's network namespace (the reader's own for
// pid 0), as the kernel's sock_diag gives them, or, where it cannot be
// asked, as text, which reads the namespace's /proc/net/unix, shows them.
func eachUnixListenerOf(procRoot string, pid int, text func() ([]byte, error), fn func(inode, path []byte)) error {
	ls, err := unixListenersDiag(procRoot, pid)
	if err != nil {
		data, err := text()
		if err != nil {
			return err
		}
		return eachUnixListener(data, fn)
	}
	var ino []byte
	for _, l := range ls {
		ino = strconv.AppendUint(ino[:0], l.inode, 10)
		fn(ino, l.path)
	}
	return nil
}

// parseUnixListeners returns the paths of listening sockets in the text of
// /proc/net/unix:
//
//	Num       RefCount Protocol Flags    Type St Inode Path
//	0000000000000000: 00000002 00000000 00010000 0001 01 20393 /run/x.sock
//
// procfs has a parser for this file, but it splits the line on blanks and so
// cuts a path that contains a space; here the path is everything after the
// inode and its one separating space, as the kernel prints it. Abstract
// socket names are printed with a leading "@" (and "@" for each NUL).
func parseUnixListeners(data []byte) (map[string]bool, error) {
	listeners := map[string]bool{}
	err := eachUnixListener(data, func(_, path []byte) { listeners[string(path)] = true })
	return listeners, err
}

// eachUnixListener calls fn with the inode and the path of each listening
// socket in the text of /proc/net/unix (see parseUnixListeners); inode is
// nil in the old layout without that column.
func eachUnixListener(data []byte, fn func(inode, path []byte)) error {
	header, rest, _ := bytes.Cut(data, []byte("\n"))
	// proc(5) documents the file without Inode; every kernel since 2.6 has it,
	// but an old layout costs one check.
	fixed := 6
	if bytes.Contains(header, []byte("Inode")) {
		fixed = 7
	}
	for line := range bytes.SplitSeq(rest, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		fields, tail := splitFields(line, fixed)
		if len(fields) < fixed {
			return fmt.Errorf("short line %q", line)
		}
		flags, err := strconv.ParseUint(string(fields[3]), 16, 32)
		if err != nil {
			return fmt.Errorf("flags in %q: %w", line, err)
		}
		if flags&soAcceptCon == 0 || len(tail) < 2 || tail[0] != ' ' {
			continue
		}
		var inode []byte
		if fixed == 7 {
			inode = fields[6]
		}
		fn(inode, tail[1:])
	}
	return nil
}

// splitFields returns the first n blank-separated fields of line and the
// rest of the line after the last of them, untouched.
func splitFields(line []byte, n int) (fields [][]byte, tail []byte) {
	fields = make([][]byte, 0, n)
	i := 0
	for len(fields) < n {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		if i == len(line) {
			return fields, nil
		}
		start := i
		for i < len(line) && line[i] != ' ' {
			i++
		}
		fields = append(fields, line[start:i])
	}
	return fields, line[i:]
}

// UnixListenersOf returns the listening unix socket paths of the network
// namespace process pid is in (<procRoot>/PID/net/unix).
func UnixListenersOf(procRoot string, pid int) (map[string]bool, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	var c listenerCache
	return c.read(procRoot, pid)
}
