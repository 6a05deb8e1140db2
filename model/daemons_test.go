package model

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
)

// TestDaemonOf: the runtime daemons are known by argv[0] or the exe, and
// podman only as its API service; the memo the leftover search asks
// through answers alike, asked once or again.
func TestDaemonOf(t *testing.T) {
	memo := daemonExes{}
	asks := map[string]func(*proc.Process) (Daemon, bool){"DaemonOf": DaemonOf, "memo": memo.of, "memo again": memo.of}
	for argv, want := range map[string]string{
		"/usr/bin/containerd":                           "containerd",
		"/usr/bin/dockerd -H fd://":                     "dockerd",
		"/usr/local/bin/cubelet --config x":             "cubelet",
		"/usr/bin/kubelet":                              "kubelet",
		"/usr/bin/crio":                                 "cri-o",
		"/usr/bin/podman system service --time 0":       "podman system service",
		"/lib/systemd/systemd-machined":                 "systemd-machined",
		"/usr/bin/podman run -d busybox":                "",
		"/usr/bin/containerd-shim-runc-v2 -id x":        "",
		"/usr/local/bin/my-containerd-exporter --serve": "",
	} {
		for _, name := range []string{"DaemonOf", "memo", "memo again"} {
			d, ok := asks[name](modeltest.Proc(10, 1, argv))
			if ok != (want != "") || d.Name != want {
				t.Errorf("%s(%q) = %q, %v; want %q", name, argv, d.Name, ok, want)
			}
		}
	}
	// argv[0] is the process's to write; the exe is the kernel's.
	p := modeltest.Proc(10, 1, "innocent")
	p.Exe = "/usr/bin/containerd"
	for _, name := range []string{"DaemonOf", "memo", "memo again"} {
		if d, ok := asks[name](p); !ok || d.Name != "containerd" {
			t.Errorf("%s: containerd with a rewritten argv[0] is %q, %v", name, d.Name, ok)
		}
	}
	// The same argv[0] and exe, another argv: podman is a daemon only as
	// its API service, whatever the memo saw of podman before.
	if _, ok := memo.of(modeltest.Proc(11, 1, "/usr/bin/podman ps")); ok {
		t.Error("memo: podman ps is a daemon")
	}
	// A host of ever new binaries does not grow the memo without bound.
	for i := range maxDaemonExes + 10 {
		memo.of(modeltest.Proc(12, 1, fmt.Sprintf("/tmp/bin%d", i)))
	}
	if len(memo) > maxDaemonExes {
		t.Errorf("memo holds %d binaries, more than %d", len(memo), maxDaemonExes)
	}
	// Nor does it keep an argv[0] as long as its process cares to write,
	// while still knowing the daemon behind it by its exe.
	clear(memo)
	long := modeltest.Proc(13, 1, "/"+strings.Repeat("x", 2*maxDaemonExeKey))
	long.Exe = "/usr/bin/containerd"
	if d, ok := memo.of(long); !ok || d.Name != "containerd" || len(memo) != 0 {
		t.Errorf("a long argv[0]: %q, %v, memo holds %d", d.Name, ok, len(memo))
	}
}

// TestDependOnThatDaemon: a daemon is depended on by the sandboxes behind
// its own sockets (or those its argv names), not by every sandbox of its
// runtime: on a host with two containerds, each one's refusal names its own
// containers.
func TestDependOnThatDaemon(t *testing.T) {
	shim := func(pid int, ns, id, sock string) *proc.Process {
		return modeltest.Proc(pid, 1, "/usr/bin/containerd-shim-runc-v2 -namespace "+ns+" -id "+id+" -address "+sock)
	}
	ctrdA := modeltest.Proc(10, 1, "/usr/bin/containerd --config /a.toml")
	ctrdB := modeltest.Proc(11, 1, "/usr/bin/containerd --config /b.toml")
	dockerd := modeltest.Proc(12, 1, "/usr/sbin/dockerd -H fd:// --containerd=/run/b.sock")
	machined := modeltest.Proc(13, 1, "/usr/lib/systemd/systemd-machined")
	s := modeltest.Snapshot(proc.Snapshot{},
		ctrdA, ctrdB, dockerd, machined,
		shim(100, "default", "a1", "/run/a.sock"), modeltest.Proc(101, 100, "app"),
		shim(200, "default", "b1", "/run/b.sock"), modeltest.Proc(201, 200, "app"),
		shim(300, "moby", "d1d1d1d1d1d1", "/run/b.sock"), modeltest.Proc(301, 300, "app"),
		modeltest.Proc(400, 1, "qemu-system-x86_64 -name guest=vm1", modeltest.Cgroup("/machine.slice/machine-vm1.scope")),
	)
	s.Listeners = map[string]bool{"/run/a.sock": true, "/run/b.sock": true}
	v := Build(s, Presets(), nil)
	for _, tc := range []struct {
		name    string
		p       *proc.Process
		listens []string
		want    []string
	}{
		{"containerd A", ctrdA, []string{"/run/a.sock"}, []string{"containerd:default/a1"}},
		{"containerd B", ctrdB, []string{"/run/b.sock"}, []string{"containerd:default/b1", "docker:moby/d1d1d1d1d1d1"}},
		{"dockerd, by the containerd its argv names", dockerd, nil, []string{"containerd:default/b1", "docker:moby/d1d1d1d1d1d1"}},
		{"machined, the host's one", machined, nil, []string{"machine:vm1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, sb := range v.DependOn(tc.p, tc.listens) {
				got = append(got, sb.Key())
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("DependOn = %q, want %q", got, tc.want)
			}
		})
	}
}
