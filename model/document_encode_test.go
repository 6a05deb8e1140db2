package model

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model/modeltest"
)

// TestDocumentEncodeMatchesEncoder holds the streaming Encode to the bytes
// json.Encoder writes for the same document, with strings that look like
// the fields it cuts at, characters the encoder escapes, and each array
// empty, nil and full.
func TestDocumentEncodeMatchesEncoder(t *testing.T) {
	proc := func(pid int, argv ...string) ProcessJSON {
		return ProcessJSON{PID: pid, PPID: 1, UID: 1000, State: "S", Comm: "c<&>", Argv: argv,
			StartTime: time.Unix(1e9, 0).UTC(), CPUSeconds: 1.5, RSSBytes: 4096, Threads: 2}
	}
	tricky := "host\n  \"sandboxes\": null\n  \"unattributed\": 3,\n"
	full := Document{
		Time: time.Unix(2e9, 0).UTC(), Host: tricky,
		Sandboxes: []SandboxJSON{
			{ID: "a<b>", Runtime: "docker", RootPID: 10, Badges: []Badge{"orphan"}, Cleanup: []string{},
				Processes: []ProcessJSON{proc(10, "x", "--id", "a&b"), proc(11)}},
			{ID: "empty", Runtime: "vm0", Badges: []Badge{}, Cleanup: []string{"/run/x"}, Processes: []ProcessJSON{}},
		},
		Unattributed:          2,
		UnattributedProcesses: []ProcessJSON{proc(20, "bash"), proc(21, `"quoted"`)},
		PartlyUnreadable:      1,
	}
	noHost := full
	noHost.UnattributedProcesses = nil
	none := Document{Time: time.Unix(0, 0).UTC(), Host: "h", Sandboxes: []SandboxJSON{}}
	nilSandboxes := none
	nilSandboxes.Sandboxes = nil
	for name, d := range map[string]Document{"full": full, "without --all": noHost, "no sandboxes": none, "nil sandboxes": nilSandboxes} {
		t.Run(name, func(t *testing.T) {
			var want, got bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			if err := enc.Encode(d); err != nil {
				t.Fatal(err)
			}
			if err := d.Encode(&got); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("Encode wrote:\n%s\njson.Encoder writes:\n%s", got.String(), want.String())
			}
		})
	}
}

// TestEncodeDocumentMatchesDocument: the view writes its document one
// sandbox at a time, and the bytes are those of the whole document's
// Encode, with and without the unattributed processes, and with no
// sandbox at all.
func TestEncodeDocumentMatchesDocument(t *testing.T) {
	const shim = "/usr/bin/containerd-shim-runc-v2 -namespace moby -id "
	partial := pr(130, 1, "vim notes")
	partial.Partial = true
	views := map[string]*View{
		"sandboxes": Build(snap(
			pr(100, 1, shim+"aaaa1111 -address /run/c.sock"),
			pr(101, 100, "sleep 1"),
			pr(120, 1, "sleep infinity", cgroup("/k8s.io/box1"), modeltest.NSpid(120, 1)),
			pr(121, 120, `sh -c "echo <&>"`, cgroup("/k8s.io/box1")),
			partial,
		), Effective(nil, true), nil),
		"none": Build(snap(pr(130, 1, "vim notes")), Effective(nil, true), nil),
	}
	for name, v := range views {
		for _, all := range []bool{false, true} {
			var want, got bytes.Buffer
			if err := v.Document(all).Encode(&want); err != nil {
				t.Fatal(err)
			}
			if err := v.EncodeDocument(&got, all); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("%s, all %v: EncodeDocument wrote:\n%s\nDocument.Encode writes:\n%s", name, all, got.String(), want.String())
			}
		}
	}
	if len(views["sandboxes"].Sandboxes) < 2 || len(views["sandboxes"].Unattributed) == 0 {
		t.Fatalf("the view has %d sandboxes and %d unattributed processes: nothing to compare", len(views["sandboxes"].Sandboxes), len(views["sandboxes"].Unattributed))
	}
}

// TestEncodeDocumentEmptyArrays: a sandbox with no process left (a
// leftover) has "processes": [], never null, however it is written.
func TestEncodeDocumentEmptyArrays(t *testing.T) {
	v := &View{Snapshot: snap(), Sandboxes: []*Sandbox{{ID: "gone1234", Runtime: "vm0"}}}
	var doc, stream bytes.Buffer
	if err := v.Document(false).Encode(&doc); err != nil {
		t.Fatal(err)
	}
	if err := v.EncodeDocument(&stream, false); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"Document.Encode": doc.String(), "EncodeDocument": stream.String()} {
		for _, field := range []string{`"processes": []`, `"badges": []`, `"cleanup": []`, `"reconcile": []`} {
			if !strings.Contains(out, field) {
				t.Errorf("%s wrote no %s:\n%s", name, field, out)
			}
		}
	}
}
