package model

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The realtime signals as kill(1), systemd and LXC number them: glibc
// keeps the kernel's first two for itself, so SIGRTMIN is 34.
const (
	sigRTMin = 34
	sigRTMax = 64
)

// ParseHaltSignal reads a rule's halt_signal: a signal's name ("SIGPWR",
// "PWR") or a realtime one ("SIGRTMIN+3", as systemd's halt is spelled).
// SIGKILL and SIGSTOP are refused: a halt signal asks the init to stop,
// which it must be able to catch.
func ParseHaltSignal(s string) (syscall.Signal, error) {
	name := strings.ToUpper(strings.TrimSpace(s))
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	var sig syscall.Signal
	switch {
	case strings.HasPrefix(name, "SIGRTMIN"):
		sig = realtime(name[len("SIGRTMIN"):], sigRTMin, 1)
	case strings.HasPrefix(name, "SIGRTMAX"):
		sig = realtime(name[len("SIGRTMAX"):], sigRTMax, -1)
	default:
		sig = unix.SignalNum(name)
	}
	switch {
	case sig == 0:
		return 0, fmt.Errorf("%q is not a signal (SIGPWR, SIGUSR1, SIGRTMIN+3, …)", s)
	case sig == unix.SIGKILL || sig == unix.SIGSTOP:
		return 0, fmt.Errorf("%s cannot be caught: a halt signal asks the init to stop", SignalName(sig))
	}
	return sig, nil
}

// realtime is SIGRTMIN+n or SIGRTMAX-n from the text after the base
// name ("", "+3", "-2"); 0 when it is not one.
func realtime(off string, base, dir int) syscall.Signal {
	if off == "" {
		return syscall.Signal(base)
	}
	if (dir > 0 && off[0] != '+') || (dir < 0 && off[0] != '-') {
		return 0
	}
	n, err := strconv.Atoi(off[1:])
	if err != nil || n < 0 || n > sigRTMax-sigRTMin {
		return 0
	}
	return syscall.Signal(base + dir*n)
}

// SignalName spells a signal as a rules file does: SIGTERM, SIGRTMIN+3.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	if sig >= sigRTMin && sig <= sigRTMax {
		return fmt.Sprintf("SIGRTMIN+%d", int(sig)-sigRTMin)
	}
	return fmt.Sprintf("signal %d", int(sig))
}
