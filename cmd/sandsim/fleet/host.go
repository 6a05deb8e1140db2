package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/prometheus/procfs"
)

// openHost prepares what the owner needs from the host: its temp
// directory, the sleep binary for leaves, and a cgroup directory of its
// own in each usable hierarchy. A host without usable cgroups is fine; the
// notes say what is missing.
func openHost(dir string) (hostEnv, []string, error) {
	var env hostEnv
	var notes []string
	base, err := os.MkdirTemp(dir, "sandsim-")
	if err != nil {
		return env, nil, fmt.Errorf("make temp dir: %w", err)
	}
	env.base = base
	env.bin = filepath.Join(base, "bin")
	if err := os.Mkdir(env.bin, 0o755); err != nil {
		return env, nil, fmt.Errorf("make bin dir: %w", err)
	}
	if env.sleep, err = findSleep(); err != nil {
		return env, nil, err
	}
	env.rootful = os.Geteuid() == 0

	mounts, err := procfs.GetMounts()
	if err != nil {
		return env, nil, fmt.Errorf("read mountinfo: %w", err)
	}
	cm := findCgroupMounts(mounts)
	self, err := readProcCgroup(os.Getpid())
	if err != nil {
		return env, nil, fmt.Errorf("read own cgroup: %w", err)
	}
	// The temp directory's name is unique on the host; a pid is not when
	// fleets run in pid namespaces of their own (each owner is pid 2).
	name := filepath.Base(base)
	if cm.Unified == "" {
		notes = append(notes, "no cgroup2 mount: sandboxes get no cgroups")
	} else if h, err := openHierarchy(cm.Unified, cm.UnifiedRoot, self.Unified, name); err != nil {
		notes = append(notes, fmt.Sprintf("cgroup v2 unusable, sandboxes get no cgroups: %v", err))
	} else {
		env.v2 = h
	}
	if cm.Freezer == "" {
		notes = append(notes, "no v1 freezer mount: freezer-v1 pauses fall back")
	} else if h, err := openHierarchy(cm.Freezer, cm.FreezerRoot, self.V1["freezer"], name); err != nil {
		notes = append(notes, fmt.Sprintf("v1 freezer unusable: %v", err))
	} else {
		env.v1 = h
	}
	return env, notes, nil
}

// findSleep returns the sleep binary leaves run. It must ignore argv[0],
// since leaves run it under other names: a multi-call binary such as
// busybox dispatches on argv[0] and would not sleep.
func findSleep() (string, error) {
	path, err := exec.LookPath("sleep")
	if err != nil {
		return "", fmt.Errorf("leaves need a sleep binary: %w", err)
	}
	path, err = filepath.Abs(path)
	if err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	if filepath.Base(resolved) != "sleep" {
		return "", fmt.Errorf("%s is %s, a multi-call binary; leaves need one that ignores argv[0] (coreutils sleep)", path, resolved)
	}
	return resolved, nil
}

// cgroupDirs lists every cgroup directory the owner made.
func (e hostEnv) cgroupDirs() []string {
	var out []string
	for _, h := range []*hierarchy{e.v2, e.v1} {
		if h != nil {
			out = append(out, h.made...)
		}
	}
	return out
}
