package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc/proctest"
)

// TestCgroupFilesLive follows one real cgroup through a freeze, a removal
// and a re-creation under the same name: the held descriptor shows the
// freeze, a removed cgroup reads as gone (and its descriptor is closed),
// and the new cgroup is opened afresh.
func TestCgroupFilesLive(t *testing.T) {
	proctest.RequireRoot(t)
	mounts, err := readMounts("/proc")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name            string
		mount           string
		v1              bool
		dirOf           func(string) string
		control         string
		freeze, thawStr string
	}{
		{name: "v2", mount: mounts.Unified, dirOf: mounts.V2Dir, control: "cgroup.freeze", freeze: "1", thawStr: "0"},
		{name: "v1 freezer", mount: mounts.Freezer, v1: true, dirOf: mounts.FreezerDir, control: "freezer.state", freeze: "FROZEN", thawStr: "THAWED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// cgroup2 is on every host CI runs on; the v1 freezer is not
			// on a pure v2 host.
			skip := t.Skipf
			if !tt.v1 {
				skip = func(format string, args ...any) { proctest.SkipMissing(t, format, args...) }
			}
			if tt.mount == "" {
				skip("no %s hierarchy mounted on this host", tt.name)
			}
			path := fmt.Sprintf("/sandtop-cgroup-files-%d", os.Getpid())
			dir := tt.dirOf(path)
			mkdir := func() {
				t.Helper()
				if err := os.Mkdir(dir, 0o755); err != nil {
					skip("cannot create a cgroup under %s: %v", tt.mount, err)
				}
			}
			mkdir()
			t.Cleanup(func() { removeCgroup(t, dir) })
			fds := &fdBudget{}
			fds.limit.Store(10)
			c := newCgroupFiles(tt.v1, tt.dirOf, fds)
			defer c.close()
			state := func() CgroupState {
				t.Helper()
				c.begin()
				c.add(path)
				return c.end()[path]
			}
			if st := state(); !st.Exists || st.Frozen {
				t.Fatalf("fresh cgroup: %+v, want existing and thawed", st)
			}
			if f := c.files[path]; f == nil || f.fd < 0 || fds.held.Load() != 1 {
				t.Fatalf("no descriptor held for %s (%+v, %d held)", path, f, fds.held.Load())
			}
			writeFile(t, filepath.Join(dir, tt.control), tt.freeze)
			if st := state(); !st.Frozen {
				t.Errorf("after freezing: %+v, want frozen", st)
			}
			writeFile(t, filepath.Join(dir, tt.control), tt.thawStr)
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
			if st := state(); st.Exists {
				t.Errorf("removed cgroup: %+v, want gone", st)
			}
			if fds.held.Load() != 0 {
				t.Errorf("%d descriptors still held for a removed cgroup", fds.held.Load())
			}
			mkdir()
			if st := state(); !st.Exists || st.Frozen {
				t.Errorf("re-created cgroup: %+v, want existing and thawed", st)
			}
			c.begin()
			c.end() // no process in it any more: its descriptor goes
			if fds.held.Load() != 0 || len(c.files) != 0 {
				t.Errorf("after a scan without it: %d held, %d files", fds.held.Load(), len(c.files))
			}
		})
	}
}

// TestScanSharesUnchangedMaps: the cgroup, freezer and listener maps of a
// snapshot are handed out again while their contents do not change, and a
// change makes a new map without touching the old snapshot's.
func TestScanSharesUnchangedMaps(t *testing.T) {
	root := proctest.Fixture(t, hostRoot)
	s := newRootScanner(t, root)
	first, second := scan(t, s), scan(t, s)
	same := func(a, b any) bool { return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() }
	if !same(first.Cgroups, second.Cgroups) || !same(first.Freezers, second.Freezers) || !same(first.Listeners, second.Listeners) {
		t.Errorf("an unchanged host gave new maps")
	}
	state := filepath.Join(root, "sys/fs/cgroup/unified/sandboxes/box1/cgroup.events")
	if err := os.WriteFile(state, []byte("populated 1\nfrozen 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	third := scan(t, s)
	if same(second.Cgroups, third.Cgroups) || third.Cgroups["/sandboxes/box1"].Frozen {
		t.Errorf("thawed box1: %v", third.Cgroups)
	}
	if !second.Cgroups["/sandboxes/box1"].Frozen {
		t.Errorf("the earlier snapshot changed: %v", second.Cgroups)
	}
	if !same(second.Freezers, third.Freezers) {
		t.Errorf("unchanged freezers gave a new map")
	}
}

// TestCgroupFilesReadOnceOutOfBudget: a scanner that may hold no
// descriptor (a one-shot one, or one out of its budget) reads each
// cgroup's state file once, not once to try holding it and again to read
// it. The reads are counted by the kernel, on the test's own thread.
func TestCgroupFilesReadOnceOutOfBudget(t *testing.T) {
	dir := quietCgroup(t, "once")
	path := "/" + filepath.Base(dir)
	// a budget of none
	c := newCgroupFiles(false, func(string) string { return dir }, &fdBudget{})
	defer c.close()

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, frozen := range []bool{false, true} {
		if frozen {
			writeFile(t, filepath.Join(dir, "cgroup.freeze"), "1")
		}
		before := threadReads(t)
		st := c.read(path)
		// threadReads' own read counts once: the kernel counts it as it
		// returns, after writing the figure it returns.
		if reads := threadReads(t) - before - 1; reads != 1 {
			t.Errorf("frozen %v: %d reads of the state, want 1", frozen, reads)
		}
		if !st.Exists || st.Frozen != frozen {
			t.Errorf("frozen %v: read %+v", frozen, st)
		}
		if f := c.files[path]; f == nil || f.fd != -1 || c.fds.held.Load() != 0 {
			t.Errorf("frozen %v: %+v held, budget %d: want none held", frozen, f, c.fds.held.Load())
		}
	}
	writeFile(t, filepath.Join(dir, "cgroup.freeze"), "0")
}

// threadReads is the calling thread's count of read system calls
// (syscr in /proc/thread-self/io), read with one read.
func threadReads(t *testing.T) int64 {
	t.Helper()
	fd, err := unix.Open("/proc/thread-self/io", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		t.Skip("this kernel counts no reads per task (CONFIG_TASK_IO_ACCOUNTING)")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 512)
	n, err := unix.Pread(fd, buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(buf[:n]), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			r, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	t.Fatalf("no syscr in /proc/thread-self/io: %q", buf[:n])
	return 0
}
