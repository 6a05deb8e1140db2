package model

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
)

// TestNetworkJSON: a sandbox lists each of its members' network
// namespaces once, with the namespace's listeners, and none of the
// host's; a view whose networks were not read has no "network".
func TestNetworkJSON(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cg := modeltest.Cgroup("/system.slice/docker-" + id + ".scope")
	snap := modeltest.Snapshot(proc.Snapshot{Time: time.Unix(1_800_000_000, 0), ClockTicks: 100},
		modeltest.Proc(10, 1, "/usr/bin/containerd-shim-runc-v2 -namespace moby -id "+id+" -address /run/containerd/containerd.sock"),
		modeltest.Proc(11, 10, "nginx: master process", cg),
		modeltest.Proc(12, 11, "nginx: worker process", cg),
	)
	v := Build(snap, Effective(nil, true), nil)
	sb := v.Sandbox("docker:" + id)
	if sb == nil || len(sb.Members) != 3 {
		t.Fatalf("no docker sandbox of 3 in %v", v.Sandboxes)
	}
	if got := v.Document(false).Sandboxes[0].Network; got != nil {
		t.Errorf("networks not read, yet %+v", got)
	}
	if w := NetworkWants(v, ResourceNeeds{}); w != nil {
		t.Errorf("nothing asked, yet reads through %v", w)
	}
	if w := NetworkWants(v, ResourceNeeds{Full: map[string]bool{sb.Key(): true}}); len(w) != 3 {
		t.Errorf("the detail pane's sandbox: reads through %v, want its 3 members", w)
	}
	host := &proc.NetNS{Ino: 4026531840, Host: true}
	box := &proc.NetNS{Ino: 4026532871, Name: "blue", Listeners: []proc.Listener{{Proto: "tcp", Addr: "0.0.0.0:80", Inode: 7}}}
	snap.NetnsOf = map[int]uint64{10: host.Ino, 11: box.Ino, 12: box.Ino}
	snap.Networks = map[uint64]*proc.NetNS{host.Ino: host, box.Ino: box}
	b, err := json.Marshal(v.Document(false).Sandboxes[0].Network)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"netns_inode":4026531840,"netns_name":"","host":true,"listeners":null},` +
		`{"netns_inode":4026532871,"netns_name":"blue","host":false,"listeners":[{"proto":"tcp","address":"0.0.0.0:80","inode":7}]}]`
	if string(b) != want {
		t.Errorf("network JSON\n got %s\nwant %s", b, want)
	}
}
