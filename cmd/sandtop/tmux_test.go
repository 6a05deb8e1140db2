package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc/proctest"
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
		if filepath.Base(f) == "tmux_test.go" {
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

// tmuxServer is a private tmux server for one test. Its socket lives in a
// directory of the test's (-S), so none outlives it, and the server is
// killed at the end. A server the test starts is its child, so whatever
// it strands comes back to the test (a child subreaper) to be reaped.
type tmuxServer struct {
	t *testing.T
	// sock is the -S option, as tmux and waitScreen take it.
	sock string
}

// needTmux skips a test that drives sandtop in a real terminal (tmux): in
// -short runs, and where tmux is missing (a failure under make test-all,
// which installs it).
func needTmux(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds sandtop and drives it in a real terminal (tmux)")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		proctest.SkipMissing(t, "needs tmux (make test-deps installs it)")
	}
}

// newTmux names a tmux server with its socket in dir; the first command
// starts it.
func newTmux(t *testing.T, dir string) *tmuxServer {
	s := &tmuxServer{t: t, sock: "-S" + filepath.Join(dir, "tmux")}
	t.Cleanup(func() { _ = exec.Command("tmux", s.sock, "kill-server").Run() })
	return s
}

// run runs one tmux command and returns its output; a failure fails the
// test.
func (s *tmuxServer) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{s.sock}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}
