package proc

import (
	"fmt"
	"io/fs"
	"os"
)

// readProcess reads everything the scanner knows about one pid, without
// any cache, the way a cold scan would: the scanner's tests check one
// against the other. (sandtop itself only reads one process through
// ReadStat and ReadIdentity.) A vanished pid (including one that vanished
// while being read) gives an error for which IsVanished is true.
func readProcess(procRoot string, pid int) (*Process, error) {
	st, err := readStatOnce(procRoot, pid)
	if err != nil {
		return nil, err
	}
	mounts, err := readMounts(procRoot)
	if err != nil {
		return nil, fmt.Errorf("read pid %d: %w", pid, err)
	}
	kthreadd := false
	if st.PID == 2 || st.PPID == 2 {
		kthreadd = pid2IsKthreadd(procRoot)
	}
	kernel := isKernel(st, kthreadd)
	ps := compactStat(&st)
	sf, gone := newStaticReader().read(procRoot, &ps, kernel, mounts, nil)
	if gone {
		return nil, fmt.Errorf("read pid %d: %w", pid, fs.ErrNotExist)
	}
	p := new(Process)
	fillProcess(p, &ps, &sf, kernel, uint64(os.Getpagesize()))
	return p, nil
}

func pid2IsKthreadd(procRoot string) bool {
	st, err := readStatOnce(procRoot, 2)
	return err == nil && isKthreadd(st)
}
