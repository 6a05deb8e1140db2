package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
)

// TestWrapValue: a long command line wraps within the width, never leaves
// a flag's leading hyphens at the end of a line, and may still break a
// hyphenated word inside.
func TestWrapValue(t *testing.T) {
	for _, tt := range []struct {
		v string
		w int
	}{
		{"containerd-shim-cube-rs -namespace default -id 19d0c2d464a9ad7d97b50358eaeb2c19753af03fa5d7c4b4e4dc9614eb7ab157 -address /tmp/sandsim-3090997045/run/cubelet.sock", 57},
		{"qemu-system-x86_64 --enable-kvm -m 512 --drive file=/var/lib/vms/a-very-long-name.img", 10},
		{"a‑b already holds a non-breaking hyphen -x", 12},
	} {
		lines := wrapValue(tt.v, tt.w)
		for i, l := range lines {
			if ansi.StringWidth(l) > tt.w {
				t.Errorf("%q at %d: line %q is wider", tt.v, tt.w, l)
			}
			trimmed := strings.TrimRight(l, " ")
			if i < len(lines)-1 && (trimmed == "-" || strings.HasSuffix(trimmed, " -") || strings.HasSuffix(trimmed, " --")) {
				t.Errorf("%q at %d: line %q ends in a flag's hyphens", tt.v, tt.w, l)
			}
		}
		if got := strings.Join(strings.Fields(strings.Join(lines, " ")), " "); strings.ReplaceAll(got, " ", "") != strings.ReplaceAll(tt.v, " ", "") {
			t.Errorf("%q at %d: wrapped into %q", tt.v, tt.w, lines)
		}
	}
	if lines := wrapValue("containerd-shim-cube-rs", 12); len(lines) < 2 || !strings.HasSuffix(lines[0], "-") {
		t.Errorf("a hyphenated word no longer breaks inside: %q", lines)
	}
}

// A pod's detail pane lists its containers: each one's ID, its processes
// and its own cgroup, as the JSON does.
func TestDetailListsPodContainers(t *testing.T) {
	slice := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod4a1c0f1e_2b3d_4e5f_8a9b_0c1d2e3f4a5b.slice"
	pause, app := strings.Repeat("a", 64), strings.Repeat("b", 64)
	start := time.Unix(1_700_000_000, 0)
	mk := func(pid, ppid int, argv, cgroup string) *proc.Process {
		return &proc.Process{PID: pid, PPID: ppid, Comm: strings.Fields(argv)[0], Argv: strings.Fields(argv), Cgroup: cgroup, Start: uint64(pid), State: 'S'}
	}
	snap := modeltest.Snapshot(proc.Snapshot{
		Time: start, BootTime: start.Add(-time.Hour), ClockTicks: 100,
		Cgroups: map[string]proc.CgroupState{}, Freezers: map[string]proc.CgroupState{}, Listeners: map[string]bool{"/run/containerd/containerd.sock": true},
	},
		mk(500, 1, "/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id "+pause+" -address /run/containerd/containerd.sock", "/system.slice/containerd.service"),
		mk(501, 500, "/pause", slice+"/cri-containerd-"+pause+".scope"),
		mk(502, 500, "server --port 8080", slice+"/cri-containerd-"+app+".scope"),
		mk(503, 502, "worker", slice+"/cri-containerd-"+app+".scope"),
	)
	v := model.Build(snap, model.Presets(), nil)
	sb := v.Sandbox("4a1c0f1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b")
	if sb == nil {
		t.Fatal("no pod sandbox")
	}
	_, lines := detail{styles: DefaultStyles()}.content(&row{kind: rowSandbox, sb: sb}, &rowCtx{view: v}, 300)
	text := ansi.Strip(strings.Join(lines, "\n"))
	for _, want := range []string{
		"containers " + pause + " 1 process in cri-containerd-" + pause + ".scope",
		app + " 2 processes in cri-containerd-" + app + ".scope",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("detail pane lacks %q:\n%s", want, text)
		}
	}
}
