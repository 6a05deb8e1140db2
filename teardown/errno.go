package teardown

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Describe names an error for a teardown event and a CLI line, as in
// "[FAIL] kill 99: EPERM (needs root)". errno is the errno constant's name
// ("EPERM", "ESRCH", …), or "" when err carries none; human is a short
// explanation. Describe(nil) is ("", "").
func Describe(err error) (errno, human string) {
	if err == nil {
		return "", ""
	}
	// Sentinels first: they say more than the errno some of them came from.
	var refused *RefusedError
	switch {
	case errors.As(err, &refused) && refused.Detail != "":
		return "", "refused: " + refused.Detail
	case errors.As(err, &refused):
		return "", "refused: " + string(refused.Reason)
	case errors.Is(err, ErrZombie):
		return "", "zombie, exited but not reaped"
	case errors.Is(err, ErrGone):
		return "ESRCH", "already exited"
	case errors.Is(err, ErrReused):
		return "", "pid now belongs to another process"
	case errors.Is(err, ErrCgroupGone):
		return "ENOENT", "cgroup already removed"
	case errors.Is(err, ErrNoCgroupKill):
		return "ENOENT", "no cgroup.kill (kernel < 5.14)"
	case errors.Is(err, ErrNoCgroupFreeze):
		return "ENOENT", "no cgroup.freeze (kernel < 5.2 or root cgroup)"
	case errors.Is(err, ErrNoPidsMax):
		return "ENOENT", "no pids controller"
	case errors.Is(err, ErrNotCgroup):
		return "", "not a cgroup"
	}
	// An errno next: "still EBUSY when the deadline came" is about EBUSY.
	var e unix.Errno
	if !errors.As(err, &e) {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return "ETIMEDOUT", "timed out"
		case errors.Is(err, context.Canceled):
			return "ECANCELED", "cancelled"
		}
		return "", err.Error()
	}
	name := unix.ErrnoName(e)
	if name == "" {
		name = fmt.Sprintf("errno %d", int(e))
	}
	switch e {
	case unix.EPERM, unix.EACCES:
		return name, "needs root"
	case unix.ESRCH:
		return name, "already exited"
	case unix.EBUSY:
		return name, "busy"
	case unix.ENOENT:
		return name, "no such file"
	}
	// strerror text, lower-case to read as a clause: "invalid argument".
	return name, strings.ToLower(e.Error()[:1]) + e.Error()[1:]
}
