package model

import (
	"testing"

	"github.com/sandtop/sandtop/model/modeltest"
)

// TestDaemonOf: the runtime daemons are known by argv[0] or the exe, and
// podman only as its API service.
func TestDaemonOf(t *testing.T) {
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
		d, ok := DaemonOf(modeltest.Proc(10, 1, argv))
		if ok != (want != "") || d.Name != want {
			t.Errorf("DaemonOf(%q) = %q, %v; want %q", argv, d.Name, ok, want)
		}
	}
	// argv[0] is the process's to write; the exe is the kernel's.
	p := modeltest.Proc(10, 1, "innocent")
	p.Exe = "/usr/bin/containerd"
	if d, ok := DaemonOf(p); !ok || d.Name != "containerd" {
		t.Errorf("containerd with a rewritten argv[0] is %q, %v", d.Name, ok)
	}
}
