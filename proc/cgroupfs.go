package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// ReadCgroupState reads what cgroupfs says about one cgroup directory: for
// cgroup v2 its cgroup.events, for a v1 freezer cgroup (v1Freezer) its
// freezer.state. A directory that does not exist (or dir == "") gives the
// zero CgroupState and no error: a cgroup that was removed is a normal event.
func ReadCgroupState(dir string, v1Freezer bool) (CgroupState, error) {
	if dir == "" {
		return CgroupState{}, nil
	}
	name := "cgroup.events"
	if v1Freezer {
		name = "freezer.state"
	}
	// Not os.ReadFile: a cgroupfs file is pollable, so the runtime would
	// register it with its poller and wake up for its events.
	buf := make([]byte, cgroupStateBufSize)
	data, err := readFileInto(filepath.Join(dir, name), &buf, 4096, true)
	if errors.Is(err, fs.ErrNotExist) {
		// The root cgroup has neither file: cgroup.events "exists on non-root
		// cgroups" (Documentation/admin-guide/cgroup-v2.rst), and the v1 root
		// "is non-freezable" (Documentation/admin-guide/cgroup-v1/freezer-subsystem.rst).
		// So tell a root (or an odd kernel) from a removed cgroup by the
		// directory itself. The root cgroup holds every unplaced process and
		// can never be frozen.
		if _, serr := os.Stat(dir); serr == nil {
			return CgroupState{Exists: true, Populated: true}, nil
		}
		return CgroupState{}, nil
	}
	if err != nil {
		return CgroupState{}, fmt.Errorf("read cgroup state: %w", err)
	}
	if v1Freezer {
		return parseFreezerState(data), nil
	}
	return parseCgroupEvents(data), nil
}

// parseCgroupEvents parses a v2 cgroup.events file, a flat-keyed file of
// "populated 0|1" and "frozen 0|1" lines (cgroup-v2.rst, "Core Interface
// Files"). Unknown keys are ignored so newer kernels keep working.
func parseCgroupEvents(data []byte) CgroupState {
	st := CgroupState{Exists: true}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		key, value, ok := bytes.Cut(bytes.TrimSpace(line), []byte(" "))
		if !ok {
			continue
		}
		on := string(bytes.TrimSpace(value)) == "1"
		switch string(key) {
		case "populated":
			st.Populated = on
		case "frozen":
			st.Frozen = on
		}
	}
	return st
}

// parseFreezerState parses a v1 freezer.state file: THAWED, FREEZING or
// FROZEN (cgroup-v1/freezer-subsystem.rst). FREEZING counts as frozen: the
// tasks are being stopped and a paused sandbox sits there when one of its
// tasks cannot freeze (e.g. stuck in the kernel), and either way it will not
// answer. v1 has no populated flag, so a readable state file reports true.
func parseFreezerState(data []byte) CgroupState {
	switch string(bytes.TrimSpace(data)) {
	case "FROZEN", "FREEZING":
		return CgroupState{Exists: true, Populated: true, Frozen: true}
	default:
		return CgroupState{Exists: true, Populated: true}
	}
}

// maxCgroupProcs bounds what ReadCgroupProcs reads: four million pids.
const maxCgroupProcs = 32 << 20

// ReadCgroupProcs returns the pids in a cgroup's cgroup.procs (v1 and v2 both
// have it; v1's tasks file lists threads, which sandtop does not need). The
// result is sorted and free of duplicates, which v1 does not promise
// (cgroups(7): "The list of PIDs is not guaranteed to be in order or free of
// duplicates"). A missing directory gives an error for which IsVanished is
// true.
func ReadCgroupProcs(dir string) ([]int, error) {
	buf := make([]byte, 4096)
	data, err := readFileInto(filepath.Join(dir, "cgroup.procs"), &buf, maxCgroupProcs, false)
	if err != nil {
		return nil, fmt.Errorf("read cgroup procs: %w", err)
	}
	pids, err := appendCgroupProcs(nil, data)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(dir, "cgroup.procs"), err)
	}
	return pids, nil
}

// appendCgroupProcs appends the pids of a cgroup.procs file (one per line)
// to pids, which it returns sorted and free of duplicates.
func appendCgroupProcs(pids []int, data []byte) ([]int, error) {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		pid, ok := parseUint(line)
		if !ok || pid == 0 || pid > math.MaxInt32 {
			return nil, fmt.Errorf("bad pid %q", line)
		}
		pids = append(pids, int(pid))
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}
