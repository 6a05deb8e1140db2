package teardown

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pinnedSleeps starts n sleep children and pins them.
func pinnedSleeps(t *testing.T, n int) ([]*exec.Cmd, []*Pinned) {
	t.Helper()
	cmds := make([]*exec.Cmd, n)
	pins := make([]*Pinned, n)
	for i := range n {
		cmds[i] = startSleep(t)
		pins[i] = pin(t, identity(t, cmds[i].Process.Pid))
	}
	return cmds, pins
}

func TestWaitExitStaggered(t *testing.T) {
	cmds, pins := pinnedSleeps(t, 3)
	const step = 40 * time.Millisecond
	start := time.Now()
	for i, cmd := range cmds {
		time.AfterFunc(time.Duration(i+1)*step, func() { cmd.Process.Kill() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exited, err := WaitExit(ctx, pins)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("WaitExit: %v", err)
	}
	if elapsed < 3*step {
		t.Errorf("WaitExit returned after %v, before the last child was killed at %v", elapsed, 3*step)
	}
	if len(exited) != 3 {
		t.Fatalf("exited %d processes, want 3", len(exited))
	}
	for i, p := range exited {
		if p != pins[i] {
			t.Errorf("exited[%d] = %v, want %v (kill order)", i, p.ID, pins[i].ID)
		}
	}
	t.Logf("returned %v after the last kill", elapsed-3*step)
}

func TestWaitExitContextEnds(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, pins := pinnedSleeps(t, 2)
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			exited, err := WaitExit(ctx, pins)
			elapsed := time.Since(start)
			if !errors.Is(err, tt.want) {
				t.Fatalf("WaitExit = %v, want %v", err, tt.want)
			}
			if len(exited) != 0 {
				t.Errorf("exited = %d processes, want none", len(exited))
			}
			// The eventfd wakes poll at once; allow for a loaded machine.
			if late := elapsed - 50*time.Millisecond; late > 100*time.Millisecond {
				t.Errorf("WaitExit returned %v after the context ended", late)
			}
		})
	}
}

// TestWaitExitAlreadyDone: a context that has ended still lets WaitExit
// report what has already exited, and an all-exited set is a success.
func TestWaitExitAlreadyDone(t *testing.T) {
	cmds, pins := pinnedSleeps(t, 2)
	cmds[0].Process.Kill()
	waitZombie(t, cmds[0].Process.Pid)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	exited, err := WaitExit(ctx, pins)
	if !errors.Is(err, context.Canceled) || len(exited) != 1 || exited[0] != pins[0] {
		t.Fatalf("WaitExit(one exited, cancelled) = %d exited, %v; want [0], Canceled", len(exited), err)
	}
	exited, err = WaitExit(ctx, pins[:1])
	if err != nil || len(exited) != 1 {
		t.Fatalf("WaitExit(all exited, cancelled) = %d exited, %v; want 1, nil", len(exited), err)
	}
	if exited, err := WaitExit(ctx, nil); err != nil || exited != nil {
		t.Fatalf("WaitExit(nothing) = %v, %v", exited, err)
	}
}

func TestWaitExitMixedFallback(t *testing.T) {
	cmds, pins := pinnedSleeps(t, 1)
	withoutPidfd(t)
	fcmds, fpins := pinnedSleeps(t, 1)
	if pins[0].Fallback || !fpins[0].Fallback {
		t.Fatal("setup: want one pidfd handle and one fallback handle")
	}
	time.AfterFunc(30*time.Millisecond, func() { fcmds[0].Process.Kill() })
	time.AfterFunc(60*time.Millisecond, func() { cmds[0].Process.Kill() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exited, err := WaitExit(ctx, append(pins, fpins...))
	if err != nil || len(exited) != 2 {
		t.Fatalf("WaitExit = %d exited, %v; want 2, nil", len(exited), err)
	}
	if exited[0] != fpins[0] {
		t.Errorf("the fallback child was killed first but seen second")
	}
}

// TestWaitExitMany: well past poll's old FD_SETSIZE-style limits.
func TestWaitExitMany(t *testing.T) {
	n := 1500
	if testing.Short() {
		n = 200
	}
	start := time.Now()
	cmds, pins := pinnedSleeps(t, n)
	t.Logf("started and pinned %d children in %v", n, time.Since(start))

	// All but the last die: WaitExit must see them and keep waiting.
	for _, cmd := range cmds[:n-1] {
		if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	exited, err := WaitExit(ctx, pins)
	if !errors.Is(err, context.DeadlineExceeded) || len(exited) != n-1 {
		t.Fatalf("WaitExit with one survivor = %d exited, %v; want %d, DeadlineExceeded", len(exited), err, n-1)
	}
	for _, p := range exited {
		if p == pins[n-1] {
			t.Fatal("the surviving child was reported as exited")
		}
	}

	cmds[n-1].Process.Kill()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start = time.Now()
	exited, err = WaitExit(ctx, pins)
	if err != nil || len(exited) != n {
		t.Fatalf("WaitExit after all killed = %d exited, %v; want %d", len(exited), err, n)
	}
	t.Logf("WaitExit on %d exited pidfds took %v", n, time.Since(start))
}
