package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

// ErrChildrenUnsupported means the kernel has no /proc/PID/task/TID/children
// files (built without CONFIG_PROC_CHILDREN); the caller falls back to
// walking ppids in a scan.
var ErrChildrenUnsupported = fmt.Errorf("/proc/PID/task/TID/children: %w", errors.ErrUnsupported)

// Children returns the pids of pid's children, sorted, from the union of
// /proc/PID/task/*/children. Each thread's file lists only the children that
// thread created, so reading the leader's file alone misses children forked by
// other threads (proc(5)). proc(5) also warns the list is only reliable while
// the children are stopped or frozen: a child forked after the read is
// missed, so callers that kill a tree walk it again afterwards.
//
// A vanished pid gives an error for which IsVanished is true; a kernel without
// the files gives ErrChildrenUnsupported.
//
// Teardown calls it for every live process of a tree on every pass of its
// SIGSTOP walk, so it reads with direct system calls into pooled buffers:
// about six system calls for a one-thread process instead of ten through
// os.Open/Readdirnames/os.ReadFile.
func Children(procRoot string, pid int) ([]int, error) {
	bufs := childrenBufs.Get().(*childrenBuf)
	defer childrenBufs.Put(bufs)
	taskDir := filepath.Join(procRoot, strconv.Itoa(pid), "task")
	tids, err := listNumeric(taskDir, bufs.dirents, bufs.tids[:0])
	if err != nil {
		return nil, fmt.Errorf("children of %d: %w", pid, err)
	}
	bufs.tids = tids
	var (
		kids []int
		read bool
	)
	for _, tid := range tids {
		data, err := readFileInto(filepath.Join(taskDir, strconv.Itoa(tid), "children"), &bufs.file, maxCmdline, false)
		if IsVanished(err) {
			// The thread exited, or the kernel has no children files; told
			// apart below.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("children of %d: %w", pid, err)
		}
		read = true
		more, err := parseChildren(data)
		if err != nil {
			return nil, fmt.Errorf("children of %d, thread %d: %w", pid, tid, err)
		}
		kids = append(kids, more...)
	}
	if !read {
		// Every thread file was missing. A live process always has at least one
		// thread, so if it is still here the kernel lacks the files.
		if _, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(pid), "stat")); err != nil {
			return nil, fmt.Errorf("children of %d: %w", pid, err)
		}
		return nil, ErrChildrenUnsupported
	}
	slices.Sort(kids)
	return slices.Compact(kids), nil
}

// childrenBuf holds Children's buffers between calls.
type childrenBuf struct {
	dirents, file []byte
	tids          []int
}

var childrenBufs = sync.Pool{New: func() any {
	return &childrenBuf{dirents: make([]byte, 4096), file: make([]byte, 4096)}
}}

// parseChildren parses one children file: pids separated by spaces.
func parseChildren(data []byte) ([]int, error) {
	fields := bytes.Fields(data)
	pids := make([]int, 0, len(fields))
	for _, f := range fields {
		pid, err := strconv.Atoi(string(f))
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("bad pid %q", f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}
