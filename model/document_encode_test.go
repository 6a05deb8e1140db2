package model

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
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
