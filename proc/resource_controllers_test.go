package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/proc/proctest"
)

// controllerFigures are the figures read from v2 controllers' interface
// files only: no core file (cpu.stat, the pressure files) gives one.
const controllerFigures = HaveMemory | HaveMemoryPeak | HaveMemoryLimit | HaveOOM | HaveCPULimit | HavePIDs | HavePIDsLimit | HaveIO

func TestParseControllers(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       controller
	}{
		{"none", "\n", 0},
		{"empty", "", 0},
		{"all read", "cpuset cpu io memory hugetlb pids rdma misc\n", ctlCPU | ctlIO | ctlMemory | ctlPIDs},
		{"others only", "cpuset hugetlb\n", 0},
		{"one", "pids\n", ctlPIDs},
		{"prefix is not a name", "memory_recursiveprot cpus\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseControllers([]byte(tc.text)); got != tc.want {
				t.Errorf("parseControllers(%q) = %04b, want %04b", tc.text, got, tc.want)
			}
		})
	}
}

// TestResourceReaderSkipsDisabledControllers makes two real v2 cgroups
// under a parent that enables no controller: Reads try none of their
// controller files, and read the parent's cgroup.subtree_control at most
// once each, for both, through one held descriptor. Once the parent
// enables pids (or memory), its figures show within reuseRounds Reads.
func TestResourceReaderSkipsDisabledControllers(t *testing.T) {
	proctest.RequireRoot(t)
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := s.Mounts()
	if m.Unified == "" {
		proctest.SkipMissing(t, "no cgroup2 mount")
	}
	parent := fmt.Sprintf("/sandtop-ctl-%d", os.Getpid())
	keys := []CgroupKey{{V2: parent + "/a"}, {V2: parent + "/b"}}
	for _, cg := range []string{parent, keys[0].V2, keys[1].V2} {
		dir := m.V2Dir(cg)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// Cleanups run last first: the children go before the parent.
		t.Cleanup(func() { removeCgroup(t, dir) })
	}

	rr := s.NewResourceReader()
	defer rr.Close()
	base := HeldDescriptors(s)
	wants := []CgroupWant{{keys[0], controllerFigures}, {keys[1], controllerFigures}}
	read := func() *Snapshot {
		t.Helper()
		snap := &Snapshot{Time: time.Now()}
		rr.Read(snap, wants, nil)
		return snap
	}
	t.Run("disabled", func(t *testing.T) {
		rounds := 2 * reuseRounds
		for range rounds {
			snap := read()
			for _, k := range keys {
				if got := snap.Resources[k]; got == nil || got.Have != 0 {
					t.Fatalf("%s, under a parent that enables no controller: %+v, want no figure", k.V2, got)
				}
			}
		}
		if rr.reads != 0 {
			t.Errorf("%d Reads tried %d controller files, want none: the parent enables no controller", rounds, rr.reads)
		}
		if rr.parentReads == 0 || rr.parentReads > rounds {
			t.Errorf("%d Reads read the shared parent's cgroup.subtree_control %d times, want at least once and at most once a Read", rounds, rr.parentReads)
		}
		if n := HeldDescriptors(s) - base; n != 1 {
			t.Errorf("holds %d descriptors, want 1: the shared parent's cgroup.subtree_control", n)
		}
	})
	t.Run("enabled later", func(t *testing.T) {
		// The parent's own controllers are what the root passes down.
		root := m.V2Dir("/")
		offered, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
		if err != nil {
			t.Fatal(err)
		}
		var ctl string
		var fig Figure
		for _, c := range []struct {
			name string
			fig  Figure
		}{{"pids", HavePIDs}, {"memory", HaveMemory}} {
			if strings.Contains(" "+strings.TrimSpace(string(offered))+" ", " "+c.name+" ") {
				ctl, fig = c.name, c.fig
				break
			}
		}
		if ctl == "" {
			// A hybrid host binds them to v1 by design: the fixture test
			// (TestResourceReaderControllerEnabledLater) shows this part.
			t.Skipf("the cgroup2 root offers neither pids nor memory (cgroup.controllers %q): v1 holds them", strings.TrimSpace(string(offered)))
		}
		for _, dir := range []string{root, m.V2Dir(parent)} {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+ctl), 0); err != nil {
				t.Fatalf("enable %s in %s: %v", ctl, dir, err)
			}
		}
		for i := range reuseRounds {
			snap := read()
			if snap.Resources[keys[0]].Has(fig) && snap.Resources[keys[1]].Has(fig) {
				t.Logf("%s figures after %d Reads", ctl, i+1)
				return
			}
		}
		t.Errorf("%s enabled in the parent: no %s figure in %d Reads", ctl, ctl, reuseRounds)
	})
	rr.Close()
	if n := HeldDescriptors(s) - base; n != 0 {
		t.Errorf("after Close, %d descriptors still held", n)
	}
}

// TestResourceReaderControllerEnabledLater is the same on a fixture
// cgroupfs, on any host: no controller file is tried while the parent's
// cgroup.subtree_control names none, and one named later is read within
// reuseRounds Reads.
func TestResourceReaderControllerEnabledLater(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sandboxes/cgroup.subtree_control", "\n")
	write("sandboxes/box/cpu.stat", "usage_usec 100\n")
	rr := NewResourceReader(t.TempDir(), Mounts{Unified: root, UnifiedRoot: "/"})
	defer rr.Close()
	key := CgroupKey{V2: "/sandboxes/box"}
	read := func() *CgroupResources {
		t.Helper()
		snap := &Snapshot{Time: time.Now()}
		rr.Read(snap, []CgroupWant{{key, controllerFigures}}, nil)
		return snap.Resources[key]
	}
	for range 2 * reuseRounds {
		if got := read(); got.Have != 0 {
			t.Fatalf("under a parent that enables no controller: %+v, want no figure", got)
		}
	}
	if rr.reads != 0 {
		t.Errorf("tried %d controller files, want none", rr.reads)
	}

	write("sandboxes/cgroup.subtree_control", "cpuset pids\n")
	write("sandboxes/box/pids.current", "3\n")
	write("sandboxes/box/pids.max", "max\n")
	for i := range reuseRounds {
		got := read()
		if !got.Has(HavePIDs) {
			continue
		}
		if got.PIDs != 3 || got.Have != HavePIDs {
			t.Errorf("after pids was enabled: %+v, want 3 tasks and nothing else", got)
		}
		t.Logf("pids after %d Reads", i+1)
		// Still no memory, io or cpu file tried: 2 pids files a Read.
		before := rr.reads
		read()
		if n := rr.reads - before; n != 2 {
			t.Errorf("a Read with pids enabled read %d files, want pids.current and pids.max", n)
		}
		return
	}
	t.Errorf("pids enabled in the parent: no pids figure in %d Reads", reuseRounds)
}
