package reap

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/hostview"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
	"github.com/sandtop/sandtop/teardown"
)

// kernelObjects are the things a vm0-like VM made beside its workspace:
// a named netns, a tap, a bind mount and a tmpfs in the workspace, a tmpfs
// in a private mount namespace a process keeps alive, a socket file, and
// a nested cgroup in two hierarchies.
type kernelObjects struct {
	netns, tap, ws, bind, tmpfs, private, socket string
	cgroups                                      []string
	// holder keeps the private mount namespace alive.
	holder *exec.Cmd
}

// makeKernelObjects makes them for sandbox s, each removed at cleanup if
// still there.
func makeKernelObjects(t *testing.T, s *fleet.Sandbox, cgParent string, hs []proc.Hierarchy) *kernelObjects {
	t.Helper()
	ws := workspace(t, s)
	o := &kernelObjects{netns: "i27n-" + s.ID, tap: "t" + s.ID, ws: ws,
		bind: filepath.Join(ws, "rootfs"), tmpfs: filepath.Join(ws, "scratch"), private: filepath.Join(ws, "priv"),
		socket: "/run/vm0/sock/" + s.ID + "/api.sock"}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "canary"), []byte("the bind source must survive"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{o.bind, o.tmpfs, o.private, filepath.Dir(o.socket)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if o.holder != nil {
			_ = o.holder.Process.Kill() // our own child, by its handle
			_ = o.holder.Wait()
		}
		for _, m := range []string{o.tmpfs, o.bind} {
			_ = exec.Command("umount", "-l", m).Run()
		}
		_ = exec.Command("ip", "netns", "delete", o.netns).Run()
		_ = exec.Command("ip", "link", "delete", o.tap).Run()
		for _, c := range o.cgroups { // deepest first
			_ = os.Remove(c)
		}
		_ = os.RemoveAll(filepath.Dir(o.socket))
		if _, err := os.Stat(filepath.Join(src, "canary")); err != nil {
			t.Errorf("the bind mount's source lost its file: %v", err)
		}
	})
	sh(t, "ip", "netns", "add", o.netns)
	sh(t, "ip", "tuntap", "add", "dev", o.tap, "mode", "tap")
	sh(t, "mount", "--bind", src, o.bind)
	sh(t, "mount", "-t", "tmpfs", "i27", o.tmpfs)
	o.holder = exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs i27priv "+o.private+" && exec sleep 600")
	if err := o.holder.Start(); err != nil {
		t.Fatal(err)
	}
	if !proctest.Eventually(5*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(o.holder.Process.Pid), "mountinfo"))
		return strings.Contains(string(b), " "+o.private+" ")
	}) {
		t.Fatal("the private mount namespace never held its tmpfs")
	}
	l, err := net.Listen("unix", o.socket)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the file stays, nobody listens: as after a SIGKILL
	for _, h := range hs {
		if h.Root != "/" || (h.V1 && h.Name != "cpu") {
			continue
		}
		d := filepath.Join(h.MountPoint, cgParent, s.ID)
		if !h.V1 {
			d = filepath.Join(d, "inner") // a nested empty cgroup
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for p := d; p != filepath.Join(h.MountPoint, cgParent); p = filepath.Dir(p) {
			o.cgroups = append(o.cgroups, p)
		}
	}
	return o
}

func sh(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		proctest.SkipMissing(t, "%s %v: %v: %s", name, args, err, out)
	}
}

// start runs a process the test owns, killed by its handle at cleanup.
func start(t *testing.T, dir string, name string, args ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command(name, args...)
	c.Dir = dir
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(c) })
	return c
}

func stop(c *exec.Cmd) {
	if c.ProcessState == nil {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}

func randomTag(t *testing.T) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// byKind is a sandbox's leftovers as "kind path" → kept reason ("" when
// removable); a mount in another mount namespace than sandtop's is
// "mount path (private)".
func byKind(sb *model.Sandbox) map[string]string {
	out := map[string]string{}
	for _, l := range sb.Leftovers {
		k := string(l.Kind) + " " + l.Path
		if l.NSPID != 0 {
			k += " (private)"
		}
		if r, seen := out[k]; !seen || r == "" {
			out[k] = l.Keep
		}
	}
	return out
}

// TestLeftoverKinds: a vm0-like VM made a netns, a tap, a bind mount and a
// tmpfs in its workspace, a tmpfs in a private mount namespace, a socket
// and nested cgroups, and was SIGKILLed. Each is listed as its leftover;
// what a live process uses is kept, by the listing and again by the
// teardown's own fresh check; a kill removes the rest, step by step in
// the audit; the same things of a live VM and the host's own are never
// proposed.
func TestLeftoverKinds(t *testing.T) {
	proctest.RequireRoot(t)
	tag := randomTag(t)
	dead := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{{Name: "vm-dead", Runtime: fleet.VM0, ID: "i27d" + tag, Orphan: true}}})
	live := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{{Name: "vm-live", Runtime: fleet.VM0, ID: "i27l" + tag}}})
	md, ml := dead.Manifest(), live.Manifest()
	vm, lvm := md.Sandbox("vm-dead"), ml.Sandbox("vm-live")
	cgParent := "/sandtop-i27-" + tag
	// Only the dead VM's runner is its supervisor: the live VM's does not
	// count as a runner of the dead one's runtime still alive.
	rules := fleetRules(md)
	for _, r := range rules {
		if r.Name == "vm0" {
			r.Leftovers = append(r.Leftovers, "netns:i27n-{id}", "link:t{id}", "cgroup:"+cgParent+"/{id}",
				// hostile templates: they must never reach the host's own
				"link:l{id}", "link:eth{id}", "netns:{id}x")
		}
	}
	hs, err := proc.ReadHierarchies("")
	if err != nil {
		t.Fatal(err)
	}
	// The parent the two VMs share goes last, after both VMs' cleanups.
	t.Cleanup(func() {
		for _, h := range hs {
			_ = os.Remove(filepath.Join(h.MountPoint, cgParent))
		}
	})
	finder := model.NewLeftovers(rules)
	finder.Record(fleettest.View(t, rules))
	o := makeKernelObjects(t, vm, cgParent, hs)
	lo := makeKernelObjects(t, lvm, cgParent, hs)
	killByHand(t, vm)

	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	eng, err := teardown.New(teardown.Options{Rules: rules, Scanner: sc})
	if err != nil {
		t.Fatal(err)
	}
	view := func() (*model.View, *model.Sandbox) {
		t.Helper()
		snap, err := sc.Scan()
		if err != nil {
			t.Fatal(err)
		}
		v, err := hostview.WithLeftovers(finder, model.Build(snap, rules, nil))

		if err != nil {
			t.Logf("leftover search: %v", err)
		}
		for _, sb := range v.Sandboxes {
			for _, l := range sb.Leftovers {
				if l.Path == "/" || l.Name == "lo" || l.Name == "eth0" || (l.Kind == proc.KindNetns && l.Ino == proc.NSInode("/proc/1/ns/net")) {
					t.Errorf("the host's own %s %s proposed as a leftover of %s", l.Kind, l.Path, sb.ID)
				}
			}
		}
		if sb := v.Sandbox(lvm.ID); sb == nil || len(sb.Members) == 0 || len(sb.Leftovers) > 0 {
			t.Errorf("the live VM: %+v", sb)
		}
		return v, v.Sandbox(vm.ID)
	}
	kill := func(v *model.View, sb *model.Sandbox, before func()) teardown.Totals {
		t.Helper()
		p, err := teardown.PlanSandbox(v, sb, teardown.PlanOptions{Protected: eng.Protected()})
		if err != nil {
			t.Fatal(err)
		}
		if before != nil {
			before()
		}
		return eng.Run(t.Context(), p, func(teardown.Event) {})
	}

	// In use: a process in the netns, one working in the tmpfs.
	inNetns := start(t, "/", "ip", "netns", "exec", o.netns, "sleep", "600")
	inMount := start(t, o.tmpfs, "sleep", "600")
	var v *model.View
	var sb *model.Sandbox
	if !proctest.Eventually(5*time.Second, func() bool {
		v, sb = view()
		return sb != nil && byKind(sb)["netns /run/netns/"+o.netns] != ""
	}) {
		t.Fatalf("the dead VM's netns is not shown in use: %+v", sb)
	}
	got := byKind(sb)
	want := map[string]string{
		"link " + o.tap: "", "mount " + o.bind: "", "mount " + o.private + " (private)": "", "socket " + o.socket: "",
		"dir /run/vm0/sock/" + vm.ID: "",
	}
	for k := range want {
		if r, ok := got[k]; !ok || r != "" {
			t.Errorf("%s: listed %v, kept %q; want removable", k, ok, r)
		}
	}
	for _, k := range []string{"netns /run/netns/" + o.netns, "mount " + o.tmpfs, "dir " + o.ws} {
		if r, ok := got[k]; !ok || r == "" {
			t.Errorf("%s: listed %v, kept %q; want kept while in use", k, ok, r)
		}
	}
	var cgs int
	for _, l := range sb.Leftovers {
		if l.Kind == proc.KindCgroup && l.Path == cgParent+"/"+vm.ID && l.Keep == "" {
			cgs++
		}
	}
	if cgs < 1 {
		t.Errorf("no removable cgroup %s/%s among %v", cgParent, vm.ID, got)
	}
	if len(o.cgroups) > 2 && cgs < 2 {
		t.Errorf("the cgroup is listed in %d hierarchies, want every one it is in (%v)", cgs, o.cgroups)
	}
	doc := v.Document(false)
	for _, s := range doc.Sandboxes {
		if s.ID == vm.ID {
			kinds := map[string]bool{}
			for _, l := range s.Leftovers {
				kinds[l.Kind] = true
			}
			for _, k := range []string{"netns", "link", "mount", "socket", "dir", "cgroup"} {
				if !kinds[k] {
					t.Errorf("JSON: no %s leftover in %+v", k, s.Leftovers)
				}
			}
		}
	}

	// kill: what is in use stays, the rest goes.
	tot := kill(v, sb, nil)
	results := tot.Leftovers
	for _, p := range []string{"/run/netns/" + o.netns, o.ws} {
		if !exists(p) {
			t.Errorf("%s removed while in use", p)
		}
	}
	if !mounted("/proc/self/mountinfo", o.tmpfs) {
		t.Errorf("%s unmounted while a process works in it", o.tmpfs)
	}
	if mounted("/proc/self/mountinfo", o.bind) || mounted("/proc/"+strconv.Itoa(o.holder.Process.Pid)+"/mountinfo", o.private) || exists(o.socket) || linkExists(o.tap) {
		t.Errorf("not removed: bind %v, private tmpfs %v, socket %v, tap %v", mounted("/proc/self/mountinfo", o.bind),
			mounted("/proc/"+strconv.Itoa(o.holder.Process.Pid)+"/mountinfo", o.private), exists(o.socket), linkExists(o.tap))
	}
	if len(tot.Leftovers) == 0 {
		t.Error("the teardown's totals name no leftover")
	}

	// Nothing uses them now: listed removable. A process enters the netns
	// between the plan and the teardown: the teardown's own check keeps it.
	stop(inNetns)
	stop(inMount)
	v, sb = view()
	if sb == nil || byKind(sb)["netns /run/netns/"+o.netns] != "" {
		t.Fatalf("after its users left, the netns: %+v", sb)
	}
	var late *exec.Cmd
	tot = kill(v, sb, func() {
		late = start(t, "/", "ip", "netns", "exec", o.netns, "sleep", "600")
		proctest.Eventually(5*time.Second, func() bool {
			return nsOfFile("/run/netns/"+o.netns) == proc.NSInode("/proc/"+strconv.Itoa(late.Process.Pid)+"/ns/net")
		})
	})
	if !exists("/run/netns/" + o.netns) {
		t.Error("the netns was deleted with a process that entered it after the plan")
	}
	stop(late)
	results = append(results, tot.Leftovers...)

	// Last: everything goes, and the audit says so kind by kind.
	v, sb = view()
	tot = kill(v, sb, nil)
	results = append(results, tot.Leftovers...)
	for _, p := range append([]string{"/run/netns/" + o.netns, o.ws, o.socket, "/run/vm0/sock/" + vm.ID}, o.cgroups...) {
		if exists(p) && strings.Contains(p, vm.ID) {
			t.Errorf("%s survived the kill", p)
		}
	}
	if mounted("/proc/self/mountinfo", o.tmpfs) {
		t.Errorf("%s still mounted", o.tmpfs)
	}
	kinds := map[string]bool{}
	for _, r := range results {
		if r.Status == teardown.OK && strings.HasPrefix(r.Detail, "removed ") {
			kinds[r.Kind] = true
		}
	}
	for _, k := range []string{"netns", "link", "mount", "socket", "dir", "cgroup"} {
		if !kinds[k] {
			t.Errorf("no %s removed, step by step: %+v", k, results)
		}
	}
	if !tot.OK() {
		t.Errorf("the last kill failed: %+v", tot)
	}

	// The live VM's things are all there.
	if !exists("/run/netns/"+lo.netns) || !linkExists(lo.tap) || !mounted("/proc/self/mountinfo", lo.bind) || !mounted("/proc/self/mountinfo", lo.tmpfs) || !exists(lo.socket) {
		t.Error("a live VM's kernel objects were touched")
	}
	for _, c := range lo.cgroups {
		if !exists(c) {
			t.Errorf("the live VM's cgroup %s was removed", c)
		}
	}
	if !allAlive(lvm) {
		t.Error("the live VM was harmed")
	}
}

func mounted(mountinfo, point string) bool {
	b, _ := os.ReadFile(mountinfo)
	return strings.Contains(string(b), " "+point+" ")
}

func linkExists(name string) bool {
	return exec.Command("ip", "link", "show", name).Run() == nil
}

func nsOfFile(p string) uint64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}
