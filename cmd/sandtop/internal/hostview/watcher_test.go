package hostview

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// TestWatcherRealOOM runs a sandbox in real cgroups with a memory limit
// (v2 where the host's cgroup2 has the memory controller, v1 memory where
// it does not, as on a hybrid host) and a process that allocates past
// it: the Watcher reads the limit, and after the kill the counter that
// grew and the kernel log's line badge the sandbox oom. A second member
// keeps the sandbox alive after its victim dies.
func TestWatcherRealOOM(t *testing.T) {
	proctest.RequireRoot(t)
	if _, err := exec.LookPath("python3"); err != nil {
		proctest.SkipMissing(t, "no python3 to allocate with")
	}
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	m := sc.Mounts()
	name := "/sandtop-oom-" + randomHex(t, 6)
	v2mem := m.Unified != "" && hasController(filepath.Join(m.Unified, "cgroup.controllers"), "memory")
	var dirs []string
	memDir := ""
	switch {
	case v2mem:
		memDir = m.V2Dir(name)
		dirs = append(dirs, memDir)
	case m.V1.Memory != "":
		memDir = filepath.Join(m.V1.Memory, name)
		dirs = append(dirs, memDir)
		if m.Unified != "" {
			dirs = append(dirs, m.V2Dir(name))
		}
		if m.Freezer == "" {
			proctest.SkipMissing(t, "v1 memory without a v1 freezer to name the sandbox's v1 cgroup by")
		}
		dirs = append(dirs, m.FreezerDir(name))
	default:
		proctest.SkipMissing(t, "no memory controller")
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var cmds []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill() // our own children, by their handles
			_ = c.Wait()
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
	})
	limitFile, limit := "memory.limit_in_bytes", strconv.Itoa(32<<20)
	if v2mem {
		limitFile = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(memDir, limitFile), []byte(limit), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(argv ...string) (*exec.Cmd, io.WriteCloser) {
		t.Helper()
		c := exec.Command(argv[0], argv[1:]...)
		in, err := c.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		for _, d := range dirs {
			if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(c.Process.Pid)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return c, in
	}
	start("sleep", "300")
	hog, go_ := start("python3", "-c", "import sys; sys.stdin.readline(); b = bytearray(256 << 20); b[::4096] = b'x' * len(b[::4096])")

	rule := &model.Rule{Name: "oomtest", Cgroup: regexp.MustCompile(`^/sandtop-oom-(?P<id>[0-9a-f]+)$`), Source: "test"}
	rules := model.Rules{rule}
	b := model.NewBuilder(rules)
	w := NewWatcher(sc)
	defer w.Close()
	var prev *model.View
	look := func() (*model.View, *model.Sandbox) {
		t.Helper()
		snap, err := sc.Scan()
		if err != nil {
			t.Fatal(err)
		}
		prev = w.Apply(b.Build(snap, prev))
		return prev, prev.Sandbox("oomtest:" + name[len("/sandtop-oom-"):])
	}
	v, sb := look()
	if sb == nil {
		t.Fatalf("no sandbox for %s", name)
	}
	r := v.Resources(sb)
	if r == nil || r.MemoryLimitBytes == nil || *r.MemoryLimitBytes != 32<<20 || r.OOMKills == nil || *r.OOMKills != 0 {
		t.Fatalf("before: resources %+v, want the 32 MiB limit and no kill", r)
	}
	if r.Source != model.SourceCgroup {
		t.Errorf("source %q, want cgroup (cpu from cpu.stat or cpuacct, memory from the memory controller)", r.Source)
	}
	if sb.HasBadge(model.BadgeOOM) {
		t.Fatal("oom before any kill")
	}
	if _, err := go_.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	err = hog.Wait()
	cmds = cmds[:1]
	if err == nil {
		t.Fatal("the allocator was not killed")
	}
	v, sb = look()
	if sb == nil || !sb.HasBadge(model.BadgeOOM) {
		t.Fatalf("after the kill: %+v", sb)
	}
	sources := map[string]bool{}
	for _, e := range sb.Trouble.OOM {
		t.Logf("evidence: %s %s", e.Source, e.Detail)
		sources[e.Source] = true
		if e.Source == "kernel log" && (e.PID != hog.Process.Pid || e.Host) {
			t.Errorf("kernel log evidence %+v: want pid %d, a cgroup limit", e, hog.Process.Pid)
		}
	}
	if !sources["cgroup"] {
		t.Error("no evidence from the cgroup's oom_kill counter")
	}
	if !sources["kernel log"] {
		t.Error("no evidence from the kernel log (root reads /dev/kmsg)")
	}
	if r := v.Resources(sb); r.OOMKills == nil || *r.OOMKills != 1 {
		t.Errorf("oom_kills %v, want 1", r.OOMKills)
	}
}

// hasController reports whether a cgroup.controllers file lists name.
func hasController(file, name string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	return regexp.MustCompile(`(^|\s)` + name + `(\s|$)`).Match(b)
}
