package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"

	"github.com/prometheus/procfs"
)

// statBufSize bounds one /proc/PID/stat line. The kernel prints 52 numbers
// and a comm of at most 64 bytes (a kernel worker's name plus its
// workqueue), about 400 bytes in all; a page leaves room for any kernel to
// come. A read that fills the buffer is treated as malformed.
const statBufSize = 4096

var errStatMalformed = errors.New("malformed stat")

// parseStat parses a /proc/PID/stat line (proc(5)) into st without
// allocating. comm is field 2, in parentheses, and may itself hold spaces
// and ')' (prctl(PR_SET_NAME) takes any bytes), so the fields after it are
// found from the LAST ')'. st.Comm is kept when the bytes equal it, so that
// a caller that passes last refresh's stat pays for a new string only when
// the name changed; State points at a static one-byte string (the runtime
// interns those).
//
// procfs.Proc.Stat does the same job through fmt.Fscan on a file it opens
// itself: measured at 10,000 processes it costs 20 allocations and ~25 µs a
// process; it also has no entry point that takes bytes, which the held
// descriptors of the hot path need (see pid_table.go).
func parseStat(b []byte, st *procfs.ProcStat) error {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return fmt.Errorf("%w: no (comm) in %q", errStatMalformed, b)
	}
	pid, ok := parseUint(bytes.TrimSpace(b[:open]))
	if !ok || pid > math.MaxInt32 {
		return fmt.Errorf("%w: pid %q", errStatMalformed, b[:open])
	}
	if comm := b[open+1 : end]; string(comm) != st.Comm {
		st.Comm = string(comm)
	}
	st.PID = int(pid)
	// Walk the fields after comm; field numbers are proc(5)'s, 1-based.
	rest := b[end+1:]
	for field := 3; field <= 26; field++ {
		for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\n') {
			rest = rest[1:]
		}
		j := 0
		for j < len(rest) && rest[j] != ' ' && rest[j] != '\n' {
			j++
		}
		if j == 0 {
			return fmt.Errorf("%w: %d fields, want at least 26", errStatMalformed, field-1)
		}
		tok := rest[:j]
		rest = rest[j:]
		switch field {
		case 3:
			if len(tok) != 1 {
				return fmt.Errorf("%w: state %q", errStatMalformed, tok)
			}
			st.State = string(tok) // one byte: no allocation
			continue
		// Fields that can be negative (tty_nr, tpgid, priority, nice) are
		// not kept, so every kept field is an unsigned decimal.
		case 4, 5, 6, 9, 14, 15, 20, 22, 24, 26:
		default:
			continue
		}
		v, ok := parseUint(tok)
		// pids and thread counts are C ints (pid_t); rss is a long.
		switch {
		case !ok,
			(field == 4 || field == 5 || field == 6 || field == 20) && v > math.MaxInt32,
			field == 24 && v > math.MaxInt64:
			return fmt.Errorf("%w: field %d is %q", errStatMalformed, field, tok)
		}
		switch field {
		case 4:
			st.PPID = int(v)
		case 5:
			st.PGRP = int(v)
		case 6:
			st.Session = int(v)
		case 9:
			st.Flags = uint(v)
		case 14:
			st.UTime = uint(v)
		case 15:
			st.STime = uint(v)
		case 20:
			st.NumThreads = int(v)
		case 22:
			st.Starttime = v
		case 24:
			st.RSS = int(v)
		case 26:
			st.StartCode = v
		}
	}
	return nil
}

// parseUint parses an unsigned decimal without the allocations of
// strconv.ParseUint(string(b)).
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// pidStat is the part of /proc/PID/stat a scan keeps. A scanner keeps one
// per process between scans (see Scanner.found), and procfs.ProcStat, which
// parseStat fills, is four times its size: at 10,000 processes that was
// 4 MB of heap, and twice that in RSS once the garbage collector's headroom
// is counted, against a budget of 60 MiB for the whole program.
type pidStat struct {
	pid, ppid, pgrp, session, threads int
	state                             byte
	comm                              string
	flags                             uint
	cpuTicks                          uint64 // utime + stime
	start, startCode                  uint64
	rss                               int // pages
}

func compactStat(st *procfs.ProcStat) pidStat {
	return pidStat{
		pid: st.PID, ppid: st.PPID, pgrp: st.PGRP, session: st.Session, threads: st.NumThreads,
		state: stateOf(*st), comm: st.Comm, flags: st.Flags,
		cpuTicks: uint64(st.UTime) + uint64(st.STime),
		start:    st.Starttime, startCode: st.StartCode, rss: st.RSS,
	}
}

// identity is the process's identity.
func (s *pidStat) identity() Identity { return Identity{PID: s.pid, Start: s.start} }

// exited is Process.Zombie for a stat: the process has exited (a zombie,
// or dead), and its memory and files are gone.
func (s *pidStat) exited() bool { return s.state == 'Z' || s.state == 'X' }

// kernel is isKernel for a pidStat.
func (s *pidStat) kernel(kthreaddAt2 bool) bool {
	return isKernel(procfs.ProcStat{PID: s.pid, PPID: s.ppid, Flags: s.flags}, kthreaddAt2)
}

// appendStatPath is <procRoot>/<pid>/stat as a cpath in buf, not cleaned:
// the kernel takes a doubled slash as one.
func appendStatPath(buf []byte, procRoot string, pid int) cpath {
	buf = append(buf[:0], procRoot...)
	buf = append(strconv.AppendInt(append(buf, '/'), int64(pid), 10), "/stat"...)
	return append(buf, 0)
}

// readStatFile opens, reads and closes one stat file into buf and parses it
// into st: the path for processes the scanner holds no descriptor for, and
// for one-off reads (ReadStat, ReadIdentity). A vanished process gives
// an error for which IsVanished is true.
func readStatFile(path cpath, buf []byte, st *procfs.ProcStat) error {
	fd, err := openReadC(path)
	if err != nil {
		return err
	}
	n, err := readOnce(fd, buf)
	closeFD(fd)
	if err != nil {
		return &fs.PathError{Op: "read", Path: path.String(), Err: err}
	}
	if err := parseStatBytes(buf[:n], st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// parseStatBytes is parseStat with the checks a read needs: a full buffer
// means a line longer than any kernel writes.
func parseStatBytes(b []byte, st *procfs.ProcStat) error {
	if len(b) >= statBufSize {
		return fmt.Errorf("%w: longer than %d bytes", errStatMalformed, statBufSize)
	}
	return parseStat(b, st)
}
