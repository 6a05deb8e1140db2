package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
	"github.com/sandtop/sandtop/teardown"
)

// The real runtimes are the judge: these tests start Debian's containerd,
// dockerd, podman, runc, bubblewrap, QEMU and systemd-nspawn on private
// roots, with a busybox root filesystem made on the fly from
// busybox-static (no image is pulled: there is no network), and check
// sandtop's scan and teardown against them. Every name (containerd
// namespace, container, cgroup, directory) carries a per-run tag, so the
// same suite can run concurrently in another checkout, and everything a
// test starts is stopped by pid and removed in t.Cleanup, even on failure.
// A runtime that is not installed or cannot start here is skipped, with
// the reason, on a developer's host; in CI as root it fails the run
// (proctest.SkipMissing), since there make test-deps installed them all.
// The suite logs which ran.

// rtTimeout bounds each runtime command.
const rtTimeout = 90 * time.Second

// rt is one runtime test's environment.
type rt struct {
	t   *testing.T
	tag string // unique per run: in every name the test makes
	dir string // private state of the runtime
	sc  *proc.Scanner
	// cgroups are paths (relative to each hierarchy) a runtime made for
	// this run without the tag in their names (docker/<id>): the leak
	// check looks for them too.
	cgroups []string
}

var (
	rtRanMu sync.Mutex
	rtRan   = map[string]string{}
)

func rtNote(name, what string) {
	rtRanMu.Lock()
	defer rtRanMu.Unlock()
	rtRan[name] = what
}

func TestRealRuntimes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the real-runtime suite starts daemons")
	}
	// containerd, dockerd, podman, runc and nspawn run as root here.
	proctest.RequireRoot(t)
	if _, err := exec.LookPath("busybox"); err != nil {
		proctest.SkipMissing(t, "no busybox (Debian busybox-static, installed by make test-deps): no root filesystem to run")
	}
	start := time.Now()
	t.Cleanup(func() {
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range rtRan {
				if !yield(k) {
					return
				}
			}
		})
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, "\n  %-10s %s", n, rtRan[n])
		}
		t.Logf("real runtimes in %s:%s", time.Since(start).Round(time.Second), b.String())
	})
	for _, tc := range []struct {
		name string
		run  func(*rt)
	}{
		{"containerd", (*rt).containerd},
		{"docker", (*rt).docker},
		{"podman", (*rt).podman},
		{"runc", (*rt).runc},
		{"bwrap", (*rt).bwrap},
		{"qemu", (*rt).qemu},
		{"nspawn", (*rt).nspawn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &rt{t: t, tag: "srt" + randHex(4)}
			r.dir = t.TempDir()
			t.Cleanup(func() {
				if t.Skipped() {
					return
				}
				r.leakCheck()
				if t.Failed() {
					rtNote(tc.name, "FAILED")
				} else {
					rtNote(tc.name, "passed")
				}
			})
			tc.run(r)
		})
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// need skips the test when a binary is missing (fails it in CI as root,
// where make test-deps installed every runtime).
func (r *rt) need(bins ...string) {
	r.t.Helper()
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			r.skip("%s is not installed (make test-deps installs it as root)", b)
		}
	}
}

// skip records why a runtime could not run here and skips; in CI as root
// a runtime that cannot start is a broken CI, so it fails instead.
func (r *rt) skip(format string, args ...any) {
	r.t.Helper()
	why := fmt.Sprintf(format, args...)
	rtNote(r.t.Name()[strings.LastIndexByte(r.t.Name(), '/')+1:], "skipped: "+why)
	proctest.SkipMissing(r.t, "%s", why)
}

// cmd runs a command and returns its output; a failure fails the test.
func (r *rt) cmd(argv ...string) string {
	r.t.Helper()
	out, err := r.try(argv...)
	if err != nil {
		r.t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return out
}

// try runs a command and returns its combined output and error.
func (r *rt) try(argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rtTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Env = append(os.Environ(), "DOCKER_API_VERSION=1.41")
	// Output goes through a file, not a pipe: a detached container (runc
	// run -d) inherits the command's stdout and would hold a pipe open.
	f, err := os.CreateTemp(r.dir, "out-")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	c.Stdout, c.Stderr, c.Stdin = f, f, nil
	err = c.Run()
	out, _ := os.ReadFile(f.Name())
	return string(out), err
}

// daemonProc is a daemon a test started.
type daemonProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// crash SIGKILLs the daemon, as a crash would, and waits for it.
func (d *daemonProc) crash() {
	_ = d.cmd.Process.Kill()
	<-d.done
}

// stop sends SIGTERM and waits, then SIGKILL after 15 s.
func (d *daemonProc) stop() {
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

// daemon starts a long-running process in its own process group, logging
// to a file, and stops it by pid at cleanup.
func (r *rt) daemon(name string, argv ...string) *daemonProc {
	r.t.Helper()
	logf, err := os.OpenFile(filepath.Join(r.dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdout, c.Stderr = logf, logf
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		logf.Close()
		r.skip("%s cannot start: %v", name, err)
	}
	d := &daemonProc{cmd: c, done: make(chan struct{})}
	go func() { _ = c.Wait(); logf.Close(); close(d.done) }()
	r.t.Cleanup(d.stop)
	return d
}

func (r *rt) logOf(name string) string {
	b, _ := os.ReadFile(filepath.Join(r.dir, name+".log"))
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// waitUntil polls cond until it holds or the timeout passes.
func waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// doc is what sandtop list --json says of the host, read through one
// scanner for the whole test (a steady refresh instead of a cold scan: the
// host may hold thousands of other processes).
func (r *rt) doc() model.Document {
	r.t.Helper()
	if r.sc == nil {
		sc, err := proc.NewScanner(proc.Options{})
		if err != nil {
			r.t.Fatal(err)
		}
		r.sc = sc
		r.t.Cleanup(func() { sc.Close() })
	}
	snap, err := r.sc.Scan()
	if err != nil {
		r.t.Fatal(err)
	}
	return model.Build(snap, model.Effective(nil, true), nil).Document(false)
}

// sandbox lists the host and returns the sandbox with this key, or nil.
func (r *rt) sandbox(key string) *model.SandboxJSON {
	r.t.Helper()
	return findKey(r.doc(), key)
}

// findKey returns the sandbox of doc with this key, or nil.
func findKey(doc model.Document, key string) *model.SandboxJSON {
	for i := range doc.Sandboxes {
		if doc.Sandboxes[i].Key == key {
			return &doc.Sandboxes[i]
		}
	}
	return nil
}

// mustSandbox waits for the sandbox with this key to show up with at least
// minProcs processes.
func (r *rt) mustSandbox(key string, minProcs int) *model.SandboxJSON {
	r.t.Helper()
	var sb *model.SandboxJSON
	waitUntil(20*time.Second, func() bool {
		sb = r.sandbox(key)
		return sb != nil && len(sb.Processes) >= minProcs
	})
	if sb == nil {
		var keys []string
		for _, s := range r.doc().Sandboxes {
			if strings.Contains(s.Key, r.tag) {
				keys = append(keys, s.Key)
			}
		}
		r.t.Fatalf("no sandbox %s; this run's: %v", key, keys)
	}
	if len(sb.Processes) < minProcs {
		r.t.Fatalf("sandbox %s has %d processes, want at least %d", key, len(sb.Processes), minProcs)
	}
	return sb
}

// kill runs sandtop kill and fails the test unless it exits with want.
func (r *rt) kill(want int, args ...string) string {
	r.t.Helper()
	args = append([]string{"kill", "--audit-log", filepath.Join(r.dir, "audit.jsonl")}, args...)
	code, out, errOut := sandtop(r.t, args...)
	if code != want {
		r.t.Fatalf("sandtop %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out + errOut
}

// identities returns the process identities of a sandbox.
func identities(sb *model.SandboxJSON) []proc.Identity {
	var out []proc.Identity
	for _, p := range sb.Processes {
		if !p.Zombie {
			out = append(out, proc.Identity{PID: p.PID, Start: p.StartTicks})
		}
	}
	return out
}

// wantGone fails for every identity still alive.
func (r *rt) wantGone(what string, ids []proc.Identity) {
	r.t.Helper()
	for _, id := range ids {
		if alive(id) {
			r.t.Errorf("%s: process %s survived", what, id)
		}
	}
}

// wantAlive fails for every identity that died.
func (r *rt) wantAlive(what string, ids []proc.Identity) {
	r.t.Helper()
	for _, id := range ids {
		if !alive(id) {
			r.t.Errorf("%s: bystander %s died", what, id)
		}
	}
}

func hasBadge(sb *model.SandboxJSON, b model.Badge) bool { return slices.Contains(sb.Badges, b) }

// leakCheck fails when anything of this run is left: a process whose argv
// names the tag or the private directory, a mount below the directory, a
// cgroup named with the tag.
func (r *rt) leakCheck() {
	r.t.Helper()
	snapProcs, _ := os.ReadDir("/proc")
	for _, e := range snapProcs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		argv := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(argv, r.tag) || strings.Contains(argv, r.dir) {
			r.t.Errorf("leak: pid %d still runs: %s", pid, argv)
		}
	}
	for _, root := range []string{"/run/runc", "/run/crun"} {
		states, _ := filepath.Glob(filepath.Join(root, "*", "state.json"))
		for _, st := range states {
			if b, err := os.ReadFile(st); err == nil && (strings.Contains(string(b), r.tag) || strings.Contains(string(b), r.dir)) {
				r.t.Errorf("leak: runtime state %s", filepath.Dir(st))
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, r.dir) || strings.Contains(l, r.tag) {
				r.t.Errorf("leak: mount %s", l)
			}
		}
	}
	for _, m := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup/freezer", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory", "/sys/fs/cgroup"} {
		for _, cg := range r.cgroups {
			if dirExists(filepath.Join(m, cg)) {
				r.t.Errorf("leak: cgroup %s", filepath.Join(m, cg))
			}
		}
		_ = filepath.WalkDir(m, func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if strings.Contains(d.Name(), r.tag) {
				r.t.Errorf("leak: cgroup %s", path)
				return filepath.SkipDir
			}
			if strings.Count(strings.TrimPrefix(path, m), "/") >= 3 {
				return filepath.SkipDir
			}
			return nil
		})
	}
}

// removeCgroups removes this run's cgroup directories in every hierarchy,
// for runtimes that leave them (containerd's /<ns>, runc's /<id> after a
// kill behind its back). Whatever still runs in them (a test that failed
// halfway) is killed first with cgroup.kill.
func removeCgroups(rel ...string) {
	for _, p := range rel {
		if dir := filepath.Join("/sys/fs/cgroup/unified", p); dirExists(dir) {
			_ = teardown.Kill(dir)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = teardown.WaitCgroupEmpty(ctx, dir)
			cancel()
		}
		if dir := filepath.Join("/sys/fs/cgroup/freezer", p); dirExists(dir) {
			_ = teardown.ThawV1(dir)
		}
	}
	hiers, _ := filepath.Glob("/sys/fs/cgroup/*")
	hiers = append(hiers, "/sys/fs/cgroup")
	for _, h := range hiers {
		for _, p := range rel {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = teardown.RemoveTree(ctx, filepath.Join(h, p))
			cancel()
		}
	}
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// writeFile writes a file, failing the test on error.
func (r *rt) writeFile(path, data string, mode os.FileMode) {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		r.t.Fatal(err)
	}
}

// shortDir is a private directory with a short path: unix socket paths
// must fit in 108 bytes, and t.TempDir's are long.
func (r *rt) shortDir() string {
	r.t.Helper()
	d, err := os.MkdirTemp("/tmp", r.tag+"-")
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { removeAllUnmounted(r.t, d) })
	return d
}

// removeAllUnmounted removes dir after unmounting whatever a runtime left
// mounted below it (deepest first).
func removeAllUnmounted(t *testing.T, dir string) {
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		var mps []string
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) > 4 && strings.HasPrefix(f[4], dir) {
				mps = append(mps, f[4])
			}
		}
		slices.SortFunc(mps, func(a, b string) int { return len(b) - len(a) })
		for _, mp := range mps {
			if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				t.Logf("unmount %s: %v", mp, err)
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Logf("remove %s: %v", dir, err)
	}
}
