package model

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/model/modeltest"
)

func TestParseHaltSignal(t *testing.T) {
	for _, c := range []struct {
		in   string
		want syscall.Signal
		err  string
	}{
		{in: "SIGPWR", want: unix.SIGPWR},
		{in: "pwr", want: unix.SIGPWR},
		{in: " SIGUSR1 ", want: unix.SIGUSR1},
		{in: "SIGRTMIN+3", want: 37},
		{in: "SIGRTMIN", want: 34},
		{in: "SIGRTMAX-1", want: 63},
		{in: "SIGRTMIN+31", err: `"SIGRTMIN+31" is not a signal (SIGPWR, SIGUSR1, SIGRTMIN+3, …)`},
		{in: "SIGRTMIN-1", err: `"SIGRTMIN-1" is not a signal (SIGPWR, SIGUSR1, SIGRTMIN+3, …)`},
		{in: "SIGRTMIN+x", err: `"SIGRTMIN+x" is not a signal (SIGPWR, SIGUSR1, SIGRTMIN+3, …)`},
		{in: "", err: `"" is not a signal (SIGPWR, SIGUSR1, SIGRTMIN+3, …)`},
		{in: "15", err: `"15" is not a signal (SIGPWR, SIGUSR1, SIGRTMIN+3, …)`},
		{in: "SIGKILL", err: "SIGKILL cannot be caught: a halt signal asks the init to stop"},
		{in: "stop", err: "SIGSTOP cannot be caught: a halt signal asks the init to stop"},
	} {
		got, err := ParseHaltSignal(c.in)
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("ParseHaltSignal(%q) = %v, %v; want the error %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseHaltSignal(%q) = %v, %v; want %d", c.in, got, err, c.want)
		case c.err == "":
			if back, err := ParseHaltSignal(SignalName(got)); err != nil || back != got {
				t.Errorf("%q spelled %q reads back as %v, %v", c.in, SignalName(got), back, err)
			}
		}
	}
}

// Only the init at the top of an LXC container gets LXC's halt signal: a
// process below it, and an init the container made for itself (unshare
// -p inside it), get SIGTERM, as does a runc container's init, whose rule
// names no halt signal.
func TestHaltSignalGoesToTheContainersInit(t *testing.T) {
	ns := func(n ...int) modeltest.Opt { return modeltest.NSpid(n...) }
	lxc, inner := cgroup("/lxc.payload.web-1"), cgroup("/lxc.payload.web-1/inner")
	v := Build(snap(
		pr(500, 1, "[lxc monitor] /var/lib/lxc web-1", cgroup("/lxc.monitor.web-1")),
		pr(510, 500, "/sbin/init", lxc, ns(510, 1)),
		pr(511, 510, "/bin/sh", lxc, ns(511, 2)),
		pr(512, 511, "unshare -p -f sleep 1", inner, ns(512, 3)),
		pr(513, 512, "sleep 1", inner, ns(513, 4, 1)),
		pr(600, 1, "sleep 1000", cgroup("/web"), ns(600, 1)),
	), Presets(), nil)
	want := map[int]syscall.Signal{510: unix.SIGPWR, 511: 0, 512: 0, 513: 0, 600: 0}
	for _, sb := range v.Sandboxes {
		for _, m := range sb.Members {
			w, ok := want[m.PID]
			if !ok {
				continue
			}
			delete(want, m.PID)
			if got := sb.HaltSignal(m); got != w {
				t.Errorf("%s pid %d: halt signal %v, want %v", sb.Key(), m.PID, got, w)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("not in any sandbox: %v", want)
	}
}
