package teardown

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// startSleep starts a /bin/sleep child that the test owns; cleanup kills
// and reaps it whatever happened in between.
func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	t.Cleanup(func() { reap(cmd) })
	return cmd
}

// reap kills (through Go's own pidfd, so never a recycled pid) and waits
// for a child. Safe to call more than once.
func reap(cmd *exec.Cmd) *os.ProcessState {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return cmd.ProcessState
}

// identity reads a live process's identity from /proc.
func identity(t *testing.T, pid int) proc.Identity {
	t.Helper()
	st, err := readStat("/proc", pid)
	if err != nil {
		t.Fatalf("identity of %d: %v", pid, err)
	}
	return proc.Identity{PID: pid, Start: st.Start}
}

func pin(t *testing.T, id proc.Identity) *Pinned {
	t.Helper()
	p, err := Pin("/proc", id)
	if err != nil {
		t.Fatalf("Pin(%v): %v", id, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// withoutPidfd makes Pin behave as on a kernel without pidfd_open.
func withoutPidfd(t *testing.T) {
	t.Helper()
	saved := pidfdOpen
	pidfdOpen = func(int, int) (int, error) { return -1, unix.ENOSYS }
	t.Cleanup(func() { pidfdOpen = saved })
}

// TestPinGoneAnswers checks that both answers a kernel gives pidfd_open for
// a process that is gone (ESRCH, and pidfs's ENOENT) make Pin say ErrGone,
// which a teardown counts as already exited, not as a failed step.
func TestPinGoneAnswers(t *testing.T) {
	for _, errno := range []unix.Errno{unix.ESRCH, unix.ENOENT} {
		saved := pidfdOpen
		pidfdOpen = func(int, int) (int, error) { return -1, errno }
		_, err := Pin("/proc", proc.Identity{PID: 4242, Start: 1})
		pidfdOpen = saved
		if !errors.Is(err, ErrGone) {
			t.Errorf("pidfd_open %v: Pin error = %v, want ErrGone", errno, err)
		}
	}
}

// waitZombie waits until pid shows state Z in /proc, which is how an
// exited but unreaped child looks.
func waitZombie(t *testing.T, pid int) proc.Stat {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := readStat("/proc", pid)
		if err != nil {
			t.Fatalf("stat %d: %v", pid, err)
		}
		if st.State == 'Z' {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never became a zombie (state %c)", pid, st.State)
		}
		time.Sleep(time.Millisecond)
	}
}

func signalOf(t *testing.T, ps *os.ProcessState) syscall.Signal {
	t.Helper()
	ws := ps.Sys().(syscall.WaitStatus)
	if !ws.Signaled() {
		t.Fatalf("child was not killed by a signal: %v", ps)
	}
	return ws.Signal()
}

func TestPinSignalLifecycle(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run(map[bool]string{false: "pidfd", true: "fallback"}[fallback], func(t *testing.T) {
			if fallback {
				withoutPidfd(t)
			}
			cmd := startSleep(t)
			id := identity(t, cmd.Process.Pid)
			p := pin(t, id)
			if p.Fallback != fallback {
				t.Fatalf("Fallback = %v, want %v", p.Fallback, fallback)
			}
			if p.Comm != "sleep" {
				t.Errorf("Comm = %q, want sleep", p.Comm)
			}
			if exited, err := p.Exited(); err != nil || exited {
				t.Fatalf("Exited() of a live child = %v, %v", exited, err)
			}
			if err := p.Signal(unix.SIGTERM); err != nil {
				t.Fatalf("Signal(SIGTERM): %v", err)
			}

			// Exited but not reaped: a zombie. It counts as exited, a new
			// Pin says so, and a signal to it is accepted and ignored.
			waitZombie(t, id.PID)
			if exited, err := p.Exited(); err != nil || !exited {
				t.Errorf("Exited() of a zombie = %v, %v; want true", exited, err)
			}
			if _, err := Pin("/proc", id); !errors.Is(err, ErrZombie) || !errors.Is(err, ErrGone) {
				t.Errorf("Pin(zombie) error = %v, want ErrZombie (and ErrGone)", err)
			}

			if sig := signalOf(t, reap(cmd)); sig != unix.SIGTERM {
				t.Fatalf("child died of %v, want SIGTERM", sig)
			}
			// Reaped: gone for good.
			if err := p.Signal(unix.SIGKILL); !errors.Is(err, ErrGone) {
				t.Errorf("Signal after reap = %v, want ErrGone", err)
			}
			if exited, err := p.Exited(); err != nil || !exited {
				t.Errorf("Exited() after reap = %v, %v; want true", exited, err)
			}
			if _, err := Pin("/proc", id); !errors.Is(err, ErrGone) || errors.Is(err, ErrZombie) {
				t.Errorf("Pin(reaped) error = %v, want ErrGone", err)
			}
		})
	}
}

func TestPinRejects(t *testing.T) {
	cmd := startSleep(t)
	live := identity(t, cmd.Process.Pid)
	tests := []struct {
		name string
		id   proc.Identity
		want error
	}{
		{"pid 1", proc.Identity{PID: 1}, ErrRefused},
		{"pid 0", proc.Identity{PID: 0}, ErrRefused},
		// kill(2) reads -1 as "every process": must never get near it.
		{"pid -1", proc.Identity{PID: -1}, ErrRefused},
		{"wrong start time", proc.Identity{PID: live.PID, Start: live.Start + 1}, ErrReused},
		// Above the largest possible pid_max (2^22), so never a process.
		{"never existed", proc.Identity{PID: 1<<22 + 1}, ErrGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Pin("/proc", tt.id)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Pin(%v) = %v, %v; want %v", tt.id, p, err, tt.want)
			}
			if p != nil {
				t.Fatalf("Pin returned a handle along with error %v", err)
			}
		})
	}
	if exited, err := pin(t, live).Exited(); err != nil || exited {
		t.Fatalf("the live child was harmed: Exited() = %v, %v", exited, err)
	}
}

// TestPinZombieNeverReaped: a child that exited and is never reaped while
// we look is reported as a zombie and no handle is made for it.
func TestPinZombieNeverReaped(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run(map[bool]string{false: "pidfd", true: "fallback"}[fallback], func(t *testing.T) {
			if fallback {
				withoutPidfd(t)
			}
			cmd := exec.Command("/bin/true")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { reap(cmd) })
			id := proc.Identity{PID: cmd.Process.Pid, Start: waitZombie(t, cmd.Process.Pid).Start}
			p, err := Pin("/proc", id)
			if !errors.Is(err, ErrZombie) || p != nil {
				t.Fatalf("Pin(zombie) = %v, %v; want nil, ErrZombie", p, err)
			}
			if st := reap(cmd); !st.Exited() || st.ExitCode() != 0 {
				t.Fatalf("zombie was disturbed: %v", st)
			}
		})
	}
}

// reusedPID returns the identity of a child A that has exited and been
// reaped, and a live child B that now holds A's pid. The 20 ms pause makes
// B start in a later clock tick than A: (pid, start) cannot tell apart
// two processes that share both.
func reusedPID(t *testing.T, beforeExit func(a proc.Identity)) (proc.Identity, *exec.Cmd) {
	t.Helper()
	proctest.RequireRoot(t)
	for attempt := 1; attempt <= 20; attempt++ {
		a := startSleep(t)
		idA := identity(t, a.Process.Pid)
		if beforeExit != nil {
			beforeExit(idA)
		}
		time.Sleep(20 * time.Millisecond)
		reap(a)
		if b, ok := proctest.ForkAtPID(t, idA.PID); ok {
			t.Logf("pid %d reused after %d attempt(s)", idA.PID, attempt)
			return idA, b
		}
	}
	t.Fatal("could not get a recycled pid in 20 attempts")
	return proc.Identity{}, nil
}

func TestPinReusedPID(t *testing.T) {
	idA, b := reusedPID(t, nil)
	idB := identity(t, b.Process.Pid)
	if idB.PID != idA.PID || idB.Start == idA.Start {
		t.Fatalf("setup: A=%v B=%v, want same pid, other start", idA, idB)
	}
	p, err := Pin("/proc", idA)
	if !errors.Is(err, ErrReused) || p != nil {
		t.Fatalf("Pin(A) with B on its pid = %v, %v; want nil, ErrReused", p, err)
	}
	if exited, err := pin(t, idB).Exited(); err != nil || exited {
		t.Fatalf("B was harmed: Exited() = %v, %v", exited, err)
	}
}

// TestFallbackSignalReusedPID: without a pidfd, a handle taken while A was
// alive must still refuse to signal B once B holds A's pid.
func TestFallbackSignalReusedPID(t *testing.T) {
	withoutPidfd(t)
	var pA *Pinned
	_, b := reusedPID(t, func(a proc.Identity) { pA = pin(t, a) })
	if !pA.Fallback {
		t.Fatal("setup: handle is not in fallback mode")
	}
	if err := pA.Signal(unix.SIGKILL); !errors.Is(err, ErrReused) {
		t.Fatalf("Signal(A) with B on its pid = %v, want ErrReused", err)
	}
	if exited, err := pA.Exited(); err != nil || !exited {
		t.Errorf("Exited(A) = %v, %v; want true", exited, err)
	}
	st, err := readStat("/proc", b.Process.Pid)
	if err != nil || st.State == 'Z' {
		t.Fatalf("B was harmed: stat = %+v, %v", st, err)
	}
}

func TestPinnedClosed(t *testing.T) {
	p := pin(t, identity(t, startSleep(t).Process.Pid))
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := p.Signal(unix.SIGKILL); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Signal after Close = %v, want os.ErrClosed", err)
	}
	if _, err := p.Exited(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Exited after Close = %v, want os.ErrClosed", err)
	}
	if _, err := WaitExit(context.Background(), []*Pinned{p}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("WaitExit after Close = %v, want os.ErrClosed", err)
	}
}

// TestCloseWaitsForWaitExit: Close must not free a pidfd that a WaitExit in
// another goroutine is polling.
func TestCloseWaitsForWaitExit(t *testing.T) {
	p := pin(t, identity(t, startSleep(t).Process.Pid))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waited := make(chan error, 1)
	go func() {
		_, err := WaitExit(ctx, []*Pinned{p})
		waited <- err
	}()
	// Wait until WaitExit holds the pin (TryLock fails while it does).
	for p.mu.TryLock() {
		p.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while WaitExit was polling the pidfd", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Errorf("WaitExit = %v, want context.Canceled", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close = %v", err)
	}
}

func TestStatZombie(t *testing.T) {
	tests := []struct {
		name string
		st   proc.Stat
		want bool
	}{
		{"running", proc.Stat{State: 'R', Threads: 1}, false},
		{"zombie", proc.Stat{State: 'Z', Threads: 1}, true},
		{"dead", proc.Stat{State: 'X', Threads: 0}, true},
		// A leader that called pthread_exit while other threads run.
		{"zombie leader of live threads", proc.Stat{State: 'Z', Threads: 3}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.st.Zombie(); got != tt.want {
				t.Errorf("zombie() = %v, want %v", got, tt.want)
			}
		})
	}
}
