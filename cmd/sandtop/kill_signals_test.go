package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/teardown"
)

var (
	builtOnce sync.Once
	builtBin  string
	builtErr  error
)

// sandtopBinary builds sandtop once per test run, for the tests that need
// a real process: real pipes, real signals, a real terminal.
func sandtopBinary(t *testing.T) string {
	t.Helper()
	builtOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sandtop-bin-")
		if err != nil {
			builtErr = err
			return
		}
		builtBin = filepath.Join(dir, "sandtop")
		if out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
			builtErr = errors.New(string(out))
		}
	})
	if builtErr != nil {
		t.Fatalf("go build: %v", builtErr)
	}
	return builtBin
}

func removeBinary() {
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
}

// TestKillFinishesWhateverHappensToItsOutput starts a real `sandtop kill`
// on a sandbox with a member that ignores SIGTERM, and then closes its
// output pipe early, hangs up on it, or interrupts it mid-teardown. Each
// time the teardown must finish -- the SIGTERM-ignoring member killed, the
// verify done -- and the audit record must be written.
func TestKillFinishesWhateverHappensToItsOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sandtop and runs fleets")
	}
	bin := sandtopBinary(t)
	for _, tc := range []struct {
		name  string
		grace string
		// act is called with each line read; it returns false to stop
		// reading (and close the read end of the pipe).
		act      func(signal func(os.Signal), line string, n int) bool
		stderr   string
		maxTaken time.Duration
	}{
		{"pipe closed after two lines", "2s", func(_ func(os.Signal), _ string, n int) bool { return n < 2 }, "output lost", 0},
		{"SIGHUP mid-teardown", "2s", func(signal func(os.Signal), line string, _ int) bool {
			if strings.Contains(line, " term ") {
				signal(syscall.SIGHUP)
			}
			return true
		}, "", 0},
		{"SIGINT cuts the grace short", "60s", func(signal func(os.Signal), line string, _ int) bool {
			if strings.Contains(line, " term ") {
				signal(syscall.SIGINT)
			}
			return true
		}, "no more waiting", 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
				{Name: "stubborn", Runtime: fleet.Containerd, IgnoreTERM: true},
			}}).Manifest()
			sb := m.Sandbox("stubborn")
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd := exec.Command(bin, "kill", "--force", "--grace", tc.grace, "--audit-log", audit, sb.ID)
			cmd.Stdout, cmd.Stderr = w, &stderr
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			sc := bufio.NewScanner(r)
			n, sent := 0, false
			signal := func(sig os.Signal) { // once: the test is about one signal
				if !sent {
					sent = true
					if err := cmd.Process.Signal(sig); err != nil {
						t.Errorf("signal %v: %v", sig, err)
					}
				}
			}
			for sc.Scan() {
				n++
				if !tc.act(signal, sc.Text(), n) {
					break
				}
			}
			r.Close()
			err = cmd.Wait()
			taken := time.Since(start)
			if err != nil {
				t.Errorf("sandtop kill: %v (stderr %q)", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.stderr)
			}
			if tc.maxTaken > 0 && taken > tc.maxTaken {
				t.Errorf("took %s: the interrupt did not cut the %s grace short", taken, tc.grace)
			}
			assertTornDownAndAudited(t, sb, audit)
		})
	}
}

// TestTUIFinishesTeardownWhenTerminalCloses confirms a teardown in the live
// screen, in a real terminal (tmux), and closes that terminal while the
// teardown waits out its grace on a member that ignores SIGTERM. sandtop
// gets SIGHUP; the teardown must still finish and be audited.
func TestTUIFinishesTeardownWhenTerminalCloses(t *testing.T) {
	needTmux(t)
	m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "stubborn", Runtime: fleet.Containerd, IgnoreTERM: true},
	}}).Manifest()
	sb := m.Sandbox("stubborn")
	bin := sandtopBinary(t)
	dir := t.TempDir()
	audit, pidFile := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "pid")
	session := "sandtop-hup-" + strconv.Itoa(os.Getpid())
	tm := newTmux(t, dir)
	sock := tm.sock
	tmux := func(args ...string) { t.Helper(); tm.run(args...) }
	script := "echo $$ > " + pidFile + "; exec " + bin + " --grace 3s --audit-log " + audit
	tmux("new-session", "-d", "-s", session, "-x", "150", "-y", "40", script)
	// "1 sandbox" on a quiet host, "N sandboxes" while other fleets run.
	waitScreen(t, sock, session, " sandbox")
	pid := readPID(t, pidFile)
	tmux("send-keys", "-t", session, "/", "id:"+sb.ID[:16], "Enter")
	waitScreen(t, sock, session, "1 of")
	tmux("send-keys", "-t", session, "K")
	waitScreen(t, sock, session, "Tear down")
	tmux("send-keys", "-t", session, "y")
	waitScreen(t, sock, session, "teardown running")
	start := time.Now()
	tmux("kill-server")
	// sandtop is gone from tmux; it comes back to this test (a
	// subreaper) when it exits.
	for running := true; running; {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		running = err == nil && !strings.Contains(string(b), ") Z ")
		if time.Since(start) > 30*time.Second {
			t.Fatal("sandtop did not exit after its terminal closed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	assertTornDownAndAudited(t, sb, audit)
}

// assertTornDownAndAudited checks that nothing of the sandbox is alive and
// that the audit log holds its one record of a complete teardown.
func assertTornDownAndAudited(t *testing.T, sb *fleet.Sandbox, audit string) {
	t.Helper()
	for _, p := range sb.Processes {
		if alive(p.Identity) {
			t.Errorf("%d %s (%s) survived", p.PID, p.Comm, p.Role)
		}
	}
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatalf("no audit record: %v", err)
	}
	var rec teardown.AuditRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.ID != sb.ID || !rec.Totals.OK() {
		t.Errorf("audit record %q (%v)", b, err)
	}
}

// TestTUIKeysWhileTooSmall selects a sandbox in the live screen in a real
// terminal (tmux), shrinks the window to 20×5, where the screen says only
// that it is too small, and presses K then y: nothing is signalled and the
// audit log is not written. Back at a usable size the screen is as it was.
func TestTUIKeysWhileTooSmall(t *testing.T) {
	s := startLiveScreen(t, 150, 40)
	s.keys("/", "id:"+s.sb.ID[:16], "Enter")
	s.wait("1 of")
	s.tm.run("resize-window", "-t", s.session, "-x", "20", "-y", "5")
	s.wait("too small")
	s.keys("K")
	time.Sleep(time.Second) // room for a plan to come back, were one asked for
	s.keys("y")
	s.keys("Enter")
	time.Sleep(2 * time.Second)
	for _, p := range s.sb.Processes {
		if !alive(p.Identity) && p.Role != fleet.RoleZombie {
			t.Errorf("%d %s (%s) was signalled from a screen that showed nothing", p.PID, p.Comm, p.Role)
		}
	}
	s.noAudit()
	s.tm.run("resize-window", "-t", s.session, "-x", "150", "-y", "40")
	if screen := s.wait("1 of"); strings.Contains(screen, "Tear down") {
		t.Errorf("a confirmation opened while the screen was too small:\n%s", screen)
	}
}

// TestScreenRefusesSupervisors: in the live screen, in a real terminal
// (tmux), K on the host group's containerd row (the supervisor of the
// fleet's containers, known by the socket it listens on) opens no
// confirmation: the status line says it is refused and names a sandbox
// that depends on it, and nothing is signalled.
func TestScreenRefusesSupervisors(t *testing.T) {
	s := startLiveScreen(t, 250, 30)
	sup := s.sb.Supervisor
	s.keys("a", "/", "pid:"+strconv.Itoa(sup.PID), "Enter")
	s.wait("(host)")
	s.keys("g", "l", "j")
	s.wait("containerd")
	s.keys("K")
	screen := s.wait("refused pid " + strconv.Itoa(sup.PID))
	if !strings.Contains(screen, "runtime daemon containerd") || strings.Contains(screen, "Tear down pid") {
		t.Errorf("the screen does not refuse containerd as a target:\n%s", screen)
	}
	if !alive(sup.Identity) {
		t.Error("containerd was signalled")
	}
	s.noAudit()
}

// liveScreen is sandtop's live screen in a tmux window of its own, on a
// fleet of one containerd sandbox, with an audit log of the test's.
type liveScreen struct {
	t       *testing.T
	sb      *fleet.Sandbox
	tm      *tmuxServer
	session string
	audit   string
}

func startLiveScreen(t *testing.T, w, h int) *liveScreen {
	t.Helper()
	needTmux(t)
	m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{{Name: "ctr", Runtime: fleet.Containerd}}}).Manifest()
	bin := sandtopBinary(t)
	dir := t.TempDir()
	s := &liveScreen{t: t, sb: m.Sandbox("ctr"), tm: newTmux(t, dir), session: "sandtop-live-" + strconv.Itoa(os.Getpid()),
		audit: filepath.Join(dir, "audit.jsonl")}
	s.tm.run("new-session", "-d", "-s", s.session, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), "exec "+bin+" --grace 0 --audit-log "+s.audit)
	s.wait(" sandbox")
	return s
}

func (s *liveScreen) keys(keys ...string) {
	s.t.Helper()
	s.tm.run(append([]string{"send-keys", "-t", s.session}, keys...)...)
}

func (s *liveScreen) wait(want string) string {
	s.t.Helper()
	return waitScreen(s.t, s.tm.sock, s.session, want)
}

// noAudit fails the test when the audit log was written: nothing was torn
// down.
func (s *liveScreen) noAudit() {
	s.t.Helper()
	if _, err := os.Stat(s.audit); !errors.Is(err, os.ErrNotExist) {
		s.t.Errorf("the audit log was written (%v)", err)
	}
}
