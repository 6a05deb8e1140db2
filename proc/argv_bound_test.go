package proc

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startWithArgv starts sh, kept alive by a sleep, with args after its
// script: a real process whose command line is that long. The stack limit
// is raised for it first: the kernel takes a quarter of it for argv.
func startWithArgv(t *testing.T, args []string) *exec.Cmd {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &old); err != nil {
		t.Fatal(err)
	}
	raised := old
	raised.Cur = max(old.Cur, 64<<20)
	if raised.Max != unix.RLIM_INFINITY && raised.Cur > raised.Max {
		t.Skipf("the stack limit (hard %d) is too low for a long argv", raised.Max)
	}
	if err := unix.Setrlimit(unix.RLIMIT_STACK, &raised); err != nil {
		t.Fatal(err)
	}
	c := exec.Command("/bin/sh", append([]string{"-c", "sleep 1000; :", "sh"}, args...)...)
	err := c.Start()
	if rerr := unix.Setrlimit(unix.RLIMIT_STACK, &old); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c
}

// TestArgvBound: a 4 MB command line is kept only up to MaxArgvBytes and
// marked cut; one just at the bound is kept whole and not marked.
func TestArgvBound(t *testing.T) {
	huge := make([]string, 40)
	for i := range huge {
		huge[i] = strings.Repeat(string(rune('a'+i%26)), 100<<10)
	}
	head := len("/bin/sh\x00-c\x00sleep 1000; :\x00sh\x00")
	exact := []string{strings.Repeat("x", MaxArgvBytes-head-1)} // its NUL ends the line at the bound
	for _, c := range []struct {
		name string
		args []string
		cut  bool
	}{
		{"4 MB", huge, true},
		{"at the bound", exact, false},
	} {
		cmd := startWithArgv(t, c.args)
		var p *Process
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var err error
			if p, err = readProcess("/proc", cmd.Process.Pid); err == nil && len(p.Argv) > 1 || time.Now().After(deadline) {
				break
			}
		}
		if p == nil {
			t.Fatalf("%s: not read", c.name)
		}
		n := len(strings.Join(p.Argv, "\x00"))
		if p.ArgvCut != c.cut || n > MaxArgvBytes || !c.cut && n != MaxArgvBytes-1 {
			t.Errorf("%s: ArgvCut %v, %d bytes kept in %d arguments; want cut %v and at most %d", c.name, p.ArgvCut, n, len(p.Argv), c.cut, MaxArgvBytes)
		}
		if c.cut && (p.Argv[4] != huge[0][:MaxArgvBytes-head] || len(p.Argv) != 5) {
			t.Errorf("%s: the kept part is not the start of the command line: %d arguments, the last %d bytes", c.name, len(p.Argv), len(p.Argv[len(p.Argv)-1]))
		}
	}
}
