package main

import "testing"

func TestCountWaits(t *testing.T) {
	out := `101 10:00:00.000100 epoll_pwait(4, [], 128, 999, NULL, 0) = 0
102 10:00:00.000300 futex(0xc000100148, FUTEX_WAKE_PRIVATE, 1) = 1
101 10:00:00.050000 <... epoll_pwait resumed>[], 128, 0) = 0
101 10:00:01.000000 pread64(5, "1 (init) S", 512, 0) = 10
102 10:00:01.000200 nanosleep({tv_sec=0, tv_nsec=20000}, NULL) = 0
101 10:00:02.000000 epoll_pwait(4,  <unfinished ...>
101 10:00:02.050000 write(1, "x", 1) = 1
`
	calls, bursts := countWaits([]byte(out))
	if calls != 4 || bursts != 3 {
		t.Errorf("countWaits = %d waits, %d bursts; want 4 waits (epoll_pwait twice, futex, nanosleep), 3 bursts", calls, bursts)
	}
}
