//go:build testhost

package guest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/proc/proctest"
)

// pod is a Kubernetes-shaped pod on containerd without a kubelet: a pause
// container and app containers sharing one runc shim (grouped by the OCI
// annotation io.containerd.runc.v2.group, as the CRI plugin does), each
// container in its own cri-containerd-<id>.scope under the pod's slice.
type pod struct {
	uid, sandbox string
	slice        string   // the pod's cgroup, /kubepods.slice/…/kubepods-…-pod<uid>.slice
	containers   []string // the pause container (the sandbox ID) first
	pids         map[string]int
}

// startPod runs a pod with QoS class qos ("burstable", "besteffort", or ""
// for Guaranteed, whose slice has no QoS level) and n app containers.
func startPod(t *testing.T, uid, qos string, apps int) *pod {
	t.Helper()
	p := &pod{uid: uid, pids: map[string]int{}}
	escaped := strings.ReplaceAll(uid, "-", "_")
	parent, podSlice := "kubepods.slice", "kubepods-pod"+escaped+".slice"
	if qos != "" {
		parent += "/kubepods-" + qos + ".slice"
		podSlice = "kubepods-" + qos + "-pod" + escaped + ".slice"
	}
	p.slice = "/" + parent + "/" + podSlice
	p.sandbox = fmt.Sprintf("%064x", uidHash(uid))
	p.containers = append(p.containers, p.sandbox)
	for i := 0; i < apps; i++ {
		p.containers = append(p.containers, fmt.Sprintf("%064x", uidHash(uid+strconv.Itoa(i))))
	}
	t.Cleanup(func() {
		for _, c := range p.containers {
			try("ctr", "-n", "k8s.io", "task", "kill", "-s", "KILL", c)
		}
		time.Sleep(time.Second)
		for _, c := range p.containers {
			try("ctr", "-n", "k8s.io", "task", "rm", "-f", c)
			try("ctr", "-n", "k8s.io", "container", "rm", c)
		}
	})
	for _, c := range p.containers {
		root := filepath.Join(t.TempDir(), "rootfs")
		proctest.BusyboxRoot(t, root)
		// --rootfs is a switch: the root file system is the first
		// argument, after every flag (ctr stops reading flags there).
		sh(t, "ctr", "-n", "k8s.io", "run", "-d", "--runc-systemd-cgroup",
			"--cgroup", podSlice+":cri-containerd:"+c,
			"--annotation", "io.containerd.runc.v2.group="+p.sandbox,
			"--annotation", "io.kubernetes.cri.sandbox-id="+p.sandbox,
			"--rootfs", root, c, "/bin/sleep", "100000")
		out := sh(t, "ctr", "-n", "k8s.io", "task", "ls")
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == c {
				p.pids[c], _ = strconv.Atoi(f[1])
			}
		}
		if p.pids[c] == 0 {
			t.Fatalf("ctr task ls has no pid for %s:\n%s", c, out)
		}
	}
	return p
}

// uidHash turns a pod UID into a stable number for container IDs.
func uidHash(s string) uint64 {
	var h uint64 = 1469598103934665603
	for _, c := range []byte(s) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// TestPods: Kubernetes-shaped pods on containerd (containerd 1.6's runc
// shim, the systemd cgroup driver, the CRI plugin's cgroup and annotation
// shapes): a Burstable pod with two app containers is one sandbox named by
// its UID, its cgroup the pod slice, its shim and every container in it,
// its containers listed with their cgroups; `kill <container id>` takes
// that container's scope only; `kill <pod uid>` takes the whole pod, shim
// included; a Guaranteed pod (no QoS level) likewise.
func TestPods(t *testing.T) {
	inLane(t, &containerdLane)
	startUnits(t, "containerd.service")
	t.Run("burstable", func(t *testing.T) {
		p := startPod(t, "4a1c0f1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b", "burstable", 2)
		podChecks(t, p, true)
	})
	t.Run("guaranteed", func(t *testing.T) {
		p := startPod(t, "5b2d1f2e-3c4d-4e5f-9a0b-1c2d3e4f5a6b", "", 1)
		podChecks(t, p, false)
	})
}

func podChecks(t *testing.T, p *pod, containerKill bool) {
	d := list(t)
	s := mustFind(t, d, p.uid, p.pids[p.sandbox])
	check(t, "runtime", func(t *testing.T) error {
		return want(s.Runtime == "kubernetes", s, "runtime %q, want kubernetes", s.Runtime)
	})
	check(t, "members", func(t *testing.T) error {
		for c, pid := range p.pids {
			if in := d.holding(pid); len(in) != 1 || !s.has(pid) {
				return want(false, s, "container %s's init %d is in %v", c[:12], pid, in)
			}
		}
		return want(s.hasComm("containerd-shim"), s, "want the pod's shim")
	})
	check(t, "cgroup", func(t *testing.T) error {
		return want(s.Cgroup == p.slice, s, "cgroup %q, want %q", s.Cgroup, p.slice)
	})
	check(t, "badges", func(t *testing.T) error {
		return want(!badge(s, "orphan") && !badge(s, "paused"), s, "badges %v", s.Badges)
	})
	check(t, "containers-listed", func(t *testing.T) error {
		out, _ := try("sandtop", "list", "--json")
		for _, c := range p.containers {
			if !strings.Contains(out, `"`+c+`"`) || !strings.Contains(out, p.slice+"/cri-containerd-"+c+".scope") {
				return fmt.Errorf("container %s and its cgroup are not in the JSON", c)
			}
		}
		return nil
	})
	if containerKill {
		app := p.containers[1]
		check(t, "kill-container", func(t *testing.T) error {
			out, err := kill(app)
			if err != nil {
				return err
			}
			if !strings.Contains(out, "which stays") {
				return fmt.Errorf("sandtop kill %s does not say the pod stays:\n%s", app, out)
			}
			if !waitGone(p.pids[app]) {
				return fmt.Errorf("container %s's init %d still alive", app[:12], p.pids[app])
			}
			for c, pid := range p.pids {
				if c != app && !alive(pid) {
					return fmt.Errorf("killing container %s took %s's init %d too", app[:12], c[:12], pid)
				}
			}
			return nil
		})
	}
	check(t, "kill-pod", func(t *testing.T) error {
		shim := 0
		for _, pr := range s.Processes {
			if pr.Comm == "containerd-shim" {
				shim = pr.PID
			}
		}
		if _, err := kill(p.uid); err != nil {
			return err
		}
		for c, pid := range p.pids {
			if !waitGone(pid) {
				return fmt.Errorf("container %s's init %d still alive", c[:12], pid)
			}
		}
		if shim != 0 && !waitGone(shim) {
			return fmt.Errorf("the pod's shim %d still alive", shim)
		}
		return by.check(t)
	})
	check(t, "runtime-view", func(t *testing.T) error {
		out, _ := try("ctr", "-n", "k8s.io", "task", "ls")
		for _, c := range p.containers {
			for _, l := range strings.Split(out, "\n") {
				if f := strings.Fields(l); len(f) >= 3 && f[0] == c && f[2] == "RUNNING" {
					return fmt.Errorf("containerd says %s still runs:\n%s", c[:12], out)
				}
			}
		}
		return nil
	})
}
