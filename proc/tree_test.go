package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

func TestChildrenFixture(t *testing.T) {
	root := filepath.Join(hostRoot, "proc")
	tests := []struct {
		name        string
		pid         int
		want        []int
		unsupported bool
		vanished    bool
	}{
		// Thread 300 forked 301 and 302, thread 305 forked 303 (and lists 301 again).
		{name: "union over threads", pid: 300, want: []int{301, 302, 303}},
		{name: "no children files", pid: 1, unsupported: true},
		{name: "vanished", pid: 999, vanished: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Children(root, tt.pid)
			switch {
			case tt.unsupported:
				if !errors.Is(err, ErrChildrenUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
					t.Fatalf("Children(%d) = %v, %v; want ErrChildrenUnsupported", tt.pid, got, err)
				}
			case tt.vanished:
				if !IsVanished(err) {
					t.Fatalf("Children(%d) = %v, %v; want a vanished error", tt.pid, got, err)
				}
			default:
				if err != nil || !slices.Equal(got, tt.want) {
					t.Errorf("Children(%d) = %v, %v; want %v", tt.pid, got, err, tt.want)
				}
			}
		})
	}
}

func TestParseChildren(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []int
		wantErr bool
	}{
		{name: "kernel format", in: "301 302 ", want: []int{301, 302}},
		{name: "none", in: "", want: []int{}},
		{name: "garbage", in: "301 x ", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseChildren([]byte(tt.in))
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("parseChildren(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestChildrenLive forks real children of the test process. Go forks from
// whichever OS thread the goroutine runs on, so they may sit in different
// threads' children files: only the union finds them all.
func TestChildrenLive(t *testing.T) {
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children"); err != nil {
		t.Skipf("kernel without CONFIG_PROC_CHILDREN: %v", err)
	}
	var want []int
	for range 4 {
		want = append(want, startSleep(t).Process.Pid)
	}
	got, err := Children("/proc", os.Getpid())
	if err != nil {
		t.Fatalf("Children(self): %v", err)
	}
	for _, pid := range want {
		if !slices.Contains(got, pid) {
			t.Errorf("Children(self) = %v, lacks our child %d", got, pid)
		}
	}

	cmd := startSleep(t)
	pid := cmd.Process.Pid
	stopChild(t, cmd)
	if got, err := Children("/proc", pid); !IsVanished(err) {
		t.Errorf("Children(reaped %d) = %v, %v; want a vanished error", pid, got, err)
	}
}

// startSleep starts "/bin/sleep 1000" as a child of the test, with argv[0]
// set to argv0 when given (a marker: sleep rejects any extra argument); it
// is killed and reaped at cleanup.
func startSleep(t *testing.T, argv0 ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sleep", "1000")
	if len(argv0) > 0 {
		cmd.Args[0] = argv0[0]
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	t.Cleanup(func() { stopChild(t, cmd) })
	return cmd
}

// stopChild kills and reaps a child this test started; calling it twice is
// harmless.
func stopChild(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if cmd.ProcessState != nil {
		return
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("kill %d: %v", cmd.Process.Pid, err)
	}
	_ = cmd.Wait() // "signal: killed" is the expected outcome
}
