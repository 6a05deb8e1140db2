package teardown

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDescribe(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("kill 99: %w", err) }
	tests := []struct {
		name         string
		err          error
		errno, human string
	}{
		{"nil", nil, "", ""},
		{"EPERM", wrap(unix.EPERM), "EPERM", "needs root"},
		{"EACCES in a PathError", &fs.PathError{Op: "open", Path: "/x", Err: unix.EACCES}, "EACCES", "needs root"},
		{"ESRCH", wrap(unix.ESRCH), "ESRCH", "already exited"},
		{"EBUSY", wrap(unix.EBUSY), "EBUSY", "busy"},
		{"ENOENT", wrap(unix.ENOENT), "ENOENT", "no such file"},
		{"other errno", wrap(unix.EINVAL), "EINVAL", "invalid argument"},
		{"unknown errno", wrap(unix.Errno(4000)), "errno 4000", "errno 4000"},
		{"gone", wrap(ErrGone), "ESRCH", "already exited"},
		{"zombie", wrap(ErrZombie), "", "zombie, exited but not reaped"},
		{"reused", wrap(ErrReused), "", "pid now belongs to another process"},
		{"refused", wrap(&RefusedError{PID: 1, Reason: ReasonInit}), "", "refused: init or not a process"},
		{"refused with detail", &RefusedError{PID: 7, Reason: ReasonSupervisor, Detail: "supervisor of sandbox x"}, "", "refused: supervisor of sandbox x"},
		{"cgroup gone", wrap(ErrCgroupGone), "ENOENT", "cgroup already removed"},
		{"no cgroup.kill", wrap(ErrNoCgroupKill), "ENOENT", "no cgroup.kill (kernel < 5.14)"},
		{"no cgroup.freeze", wrap(ErrNoCgroupFreeze), "ENOENT", "no cgroup.freeze (kernel < 5.2 or root cgroup)"},
		{"no pids.max", wrap(ErrNoPidsMax), "ENOENT", "no pids controller"},
		{"not a cgroup", wrap(ErrNotCgroup), "", "not a cgroup"},
		{"deadline", wrap(context.DeadlineExceeded), "ETIMEDOUT", "timed out"},
		// rmdirBusy's error carries both; the errno is what happened.
		{"busy until deadline", fmt.Errorf("rmdir x (%w): %w", context.DeadlineExceeded, unix.EBUSY), "EBUSY", "busy"},
		{"cancelled", wrap(context.Canceled), "ECANCELED", "cancelled"},
		{"plain error", errors.New("something odd"), "", "something odd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errno, human := Describe(tt.err)
			if errno != tt.errno || human != tt.human {
				t.Errorf("Describe(%v) = %q, %q; want %q, %q", tt.err, errno, human, tt.errno, tt.human)
			}
		})
	}
}
