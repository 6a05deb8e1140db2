package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoTestLeavesTmuxSockets: a tmux server named with -L keeps its socket
// in /tmp/tmux-UID after kill-server, one more file per test run; every
// test's tmux must use -S with a socket in its own temporary directory.
func TestNoTestLeavesTmuxSockets(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "*", "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join("..", "..", "*", "*", "*_test.go"))
	named := regexp.MustCompile(`"-L"|"-L" *\+|"-L[^"]*"`)
	for _, f := range append(files, more...) {
		if filepath.Base(f) == "tmux_sockets_test.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "tmux") && named.Match(b) {
			t.Errorf("%s starts tmux with -L: use -S and a socket in t.TempDir()", f)
		}
	}
}
