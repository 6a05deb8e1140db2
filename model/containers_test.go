package model

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// A Kubernetes pod on containerd as the Debian 12 test host showed it (ctr
// run --runc-systemd-cgroup with the CRI plugin's annotations): one shim
// for the pod, the pause container and two app containers each in its own
// cri-containerd-<id>.scope under the pod's slice. The pod is one sandbox
// with its containers listed; a container's ID names that container alone,
// with its own scope; the pause container's ID names the pod.
func TestPodContainers(t *testing.T) {
	podUID := "4a1c0f1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
	slice := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(podUID, "-", "_") + ".slice"
	pause, app1, app2 := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("b", 12)+strings.Repeat("c", 52)
	scope := func(id string) string { return slice + "/cri-containerd-" + id + ".scope" }
	s := snap(
		pr(500, 1, "/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id "+pause+" -address /run/containerd/containerd.sock", cgroup("/system.slice/containerd.service")),
		pr(501, 500, "sleep 100000", cgroup(scope(pause))),
		pr(502, 500, "sleep 100000", cgroup(scope(app1))),
		pr(503, 500, "sleep 100000", cgroup(scope(app2))),
		pr(504, 503, "sh -c worker", cgroup(scope(app2))),
	)
	s.Listeners["/run/containerd/containerd.sock"] = true
	v := Build(s, Presets(), nil)
	if len(v.Sandboxes) != 1 {
		t.Fatalf("%d sandboxes, want the pod alone", len(v.Sandboxes))
	}
	pod := one(t, v, podUID)
	wantPIDs(t, pod, 500, 501, 502, 503, 504)
	if pod.Cgroup != slice {
		t.Errorf("pod cgroup %q, want %q", pod.Cgroup, slice)
	}
	cs := pod.Containers()
	if len(cs) != 3 || cs[0].ID != pause || cs[1].ID != app1 || cs[2].ID != app2 || cs[2].Cgroup != scope(app2) || len(cs[2].Members) != 2 {
		t.Fatalf("containers %+v", cs)
	}

	c, err := v.Resolve(app2)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", app2, err)
	}
	if c.Pod != pod || c.ID != app2 || c.Cgroup != scope(app2) || !c.Supervised {
		t.Errorf("container: pod %v id %s cgroup %s supervised %v", c.Pod != nil, c.ID, c.Cgroup, c.Supervised)
	}
	wantPIDs(t, c, 503, 504)
	if again := v.Sandbox(c.Key()); again == nil || again.ID != app2 || !again.Holds(s.Proc(504).ID()) || again.Holds(s.Proc(502).ID()) {
		t.Errorf("the container is not found again by its key %q", c.Key())
	}
	if got, err := v.Resolve(app2[:13]); err != nil || got.ID != app2 {
		t.Errorf("unique prefix: %v %v", got, err)
	}
	// A prefix of both app containers is ambiguous, and says so.
	if _, err := v.Resolve(app2[:12]); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("Resolve(%s): %v, want ambiguous", app2[:12], err)
	}
	if got, err := v.Resolve(pause); err != nil || got != pod {
		t.Errorf("the pause container's ID names the pod: %v %v", got, err)
	}

	var buf bytes.Buffer
	if err := v.EncodeDocument(&buf, false); err != nil {
		t.Fatal(err)
	}
	var doc Document
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	got := doc.Sandboxes[0].Containers
	if len(got) != 3 || got[2].ID != app2 || got[2].Cgroup != scope(app2) || len(got[2].PIDs) != 2 || got[2].PIDs[0] != 503 {
		t.Errorf("JSON containers %+v", got)
	}
}

// A sandbox that is itself one container (Docker's docker-<id>.scope) has
// no containers listed.
func TestNoContainersInAContainer(t *testing.T) {
	id := strings.Repeat("d", 64)
	v := Build(snap(pr(600, 1, "sleep 1", cgroup("/system.slice/docker-"+id+".scope"))), Presets(), nil)
	if cs := one(t, v, id).Containers(); cs != nil {
		t.Errorf("containers %+v", cs)
	}
}
