package proc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"slices"
)

// direntBufSize is the getdents64 buffer of a pid listing. A pid entry takes
// 32 bytes (a 19-byte header, the name and its NUL, aligned to 8), so 64 KiB
// lists about 2,000 pids a call.
const direntBufSize = 64 << 10

// pidLister lists the pid directories of a procfs into reused memory.
//
// procfs.FS.AllProcs (and os.File.ReadDir) allocate a string or a DirEntry
// per process and sort by pid through an interface: about 10,000 allocations
// for a listing at 10,000 processes, more than the whole allocation budget
// of a refresh. getdents64(2) into one buffer and a hand parse of the
// digits allocate nothing.
type pidLister struct {
	buf  []byte
	pids []int
}

// list returns the pids under root, ascending. The slice is reused by the
// next call.
func (l *pidLister) list(root string) ([]int, error) {
	if l.buf == nil {
		l.buf = make([]byte, direntBufSize)
	}
	var err error
	if l.pids, err = listNumeric(root, l.buf, l.pids[:0]); err != nil {
		return nil, err
	}
	// procfs lists pids in ascending order (fs/proc/base.c, next_tgid), so
	// this check is all the sorting a real /proc costs; a fixture directory
	// on another filesystem comes in hash order.
	if !slices.IsSorted(l.pids) {
		slices.Sort(l.pids)
	}
	return l.pids, nil
}

// listNumeric appends to out the numeric names in dir (pids in /proc, tids
// in /proc/PID/task), in directory order, reading with getdents64 into buf.
func listNumeric(dir string, buf []byte, out []int) ([]int, error) {
	fd, err := openRead(dir)
	if err != nil {
		return nil, err
	}
	defer closeFD(fd)
	for {
		n, err := getdents(fd, buf)
		if err != nil {
			return nil, &fs.PathError{Op: "getdents64", Path: dir, Err: err}
		}
		if n == 0 {
			return out, nil
		}
		if out, err = appendPIDs(out, buf[:n]); err != nil {
			return nil, fmt.Errorf("list %s: %w", dir, err)
		}
	}
}

// appendPIDs appends the numeric names among the linux_dirent64 records in
// b (getdents64(2): d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name
// NUL-terminated). Non-numeric names (self, sys, …) are skipped.
func appendPIDs(pids []int, b []byte) ([]int, error) {
	const nameOff = 19
	for len(b) > 0 {
		if len(b) < nameOff {
			return pids, errors.New("short dirent")
		}
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < nameOff || reclen > len(b) {
			return pids, fmt.Errorf("dirent length %d out of range", reclen)
		}
		name := b[nameOff:reclen]
		b = b[reclen:]
		pid := 0
		for _, c := range name {
			if c == 0 {
				break
			}
			if c < '0' || c > '9' || pid > 1<<31 {
				pid = -1
				break
			}
			pid = pid*10 + int(c-'0')
		}
		if pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
