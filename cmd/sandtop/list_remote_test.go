package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
)

// Bad uses of the remote views are usage errors that name the flag.
func TestListRemoteUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "badge:orphan"}, "unknown command"},
		{[]string{"list", "--prometheus", "ftp://x"}, "--prometheus"},
		{[]string{"list", "--prometheus", "prometheus:9090"}, "--prometheus"},
		{[]string{"list", "--from", "http://"}, "--from"},
		{[]string{"list", "--prometheus", "http://a:1", "--from", "http://b:1"}, "give one"},
		{[]string{"list", "--from", "http://a:1", "--at", "03:12"}, "--at"},
		{[]string{"list", "--from", "http://a:1", "--tree"}, "--tree"},
		{[]string{"list", "--prometheus", "http://a:1", "--all"}, "--all"},
		{[]string{"list", "--prometheus", "http://a:1", "badge:nope"}, "filter"},
	} {
		code, _, errOut := sandtop(t, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want %d naming %q", c.args, code, errOut, exitUsage, c.want)
		}
	}
	// Nothing answers: a failure (exit 1) that says where it asked.
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	code, _, errOut := sandtop(t, "list", "--from", srv.URL)
	if code != 1 || !strings.Contains(errOut, srv.URL) {
		t.Errorf("list --from a closed port: exit %d, %q", code, errOut)
	}
}

// Another host's document is what that host's processes chose: every
// string of it is escaped before it reaches the terminal.
func TestListFromEscapes(t *testing.T) {
	evil := "web\x1b]0;owned\x07\x1b[2J"
	doc := model.Document{Time: time.Now(), Host: "h\x1b[31m", Sandboxes: []model.SandboxJSON{{
		ID: evil, Runtime: "docker", Badges: []model.Badge{model.BadgeOrphan}, RootPID: 7,
		Processes: []model.ProcessJSON{{PID: 7, Comm: "sh", Argv: []string{"sh"}}},
	}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/sandboxes" || r.Method != "GET" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(doc)
	}))
	defer srv.Close()
	code, out, errOut := sandtop(t, "list", "--from", srv.URL+"/", "web")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("list --from wrote a control character:\n%q", out)
	}
	if !strings.Contains(out, model.Printable(evil)) || !strings.Contains(out, "no signal crosses the network") {
		t.Errorf("list --from:\n%s", out)
	}
	// The filter runs on the document: "nginx" matches nothing there.
	if _, out, _ := sandtop(t, "list", "--from", srv.URL, "nginx"); strings.Contains(out, "docker") {
		t.Errorf("list --from URL nginx kept a sandbox that does not match:\n%s", out)
	}
}
