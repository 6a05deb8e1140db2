package teardown

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// The kernel says which processes will not act on SIGTERM: a signal set to
// SIG_IGN is in SigIgn, a blocked one in SigBlk, a handled one in SigCgt
// (/proc/PID/status, proc(5); hex masks, bit n-1 for signal n). The init
// of a pid namespace gets from outside it only the signals it handles
// (and SIGKILL): the kernel drops the rest (pid_namespaces(7)), so an
// application run as a container's pid 1 with no SIGTERM handler never
// sees SIGTERM. The plan names them all, so the operator knows before
// confirming who will be SIGKILLed after the grace, and the grace log
// names them while it waits. A member with a halt signal is judged by
// that signal, which it gets instead of SIGTERM.

// noteResisters reads, for each live member, whether it ignores, blocks
// or never receives the signal the graceful phase sends it, from
// procRoot. It does I/O: planners that must not (a view being drawn)
// leave PlanOptions.ProcRoot empty and skip it.
func (p *Plan) noteResisters(procRoot string) {
	for i := range p.Members {
		m := &p.Members[i]
		if m.Zombie {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(m.PID), "status"))
		if err != nil {
			continue
		}
		// Read after the status: a process that has the member's identity
		// now had it when its status was read (the view planned from may
		// be a refresh old, and the pid someone else's since).
		if now, _, err := proc.ReadIdentity(procRoot, m.PID); err != nil || now != m.Identity {
			continue
		}
		sig := cmp.Or(m.Halt, unix.SIGTERM)
		bit, name := uint64(1)<<(sig-1), model.SignalName(sig)
		switch {
		case statusMask(b, "SigIgn")&bit != 0:
			m.Resists = "ignores " + name
		case statusMask(b, "SigBlk")&bit != 0:
			m.Resists = "blocks " + name
		case statusMask(b, "SigCgt")&bit == 0 && namespaceInit(b):
			m.Resists = "gets no " + name + " as pid 1 of its namespace without a handler"
		}
	}
}

// namespaceInit reports whether a /proc/PID/status is that of the init
// of a pid namespace below the reader's: its NSpid has more than one
// entry, the last of them 1.
func namespaceInit(b []byte) bool {
	for line := range bytes.Lines(b) {
		v, ok := bytes.CutPrefix(line, []byte("NSpid:"))
		if !ok {
			continue
		}
		f := bytes.Fields(v)
		return len(f) > 1 && string(f[len(f)-1]) == "1"
	}
	return false
}

// statusMask parses a hex signal mask line of /proc/PID/status; 0 when
// absent or malformed.
func statusMask(b []byte, key string) uint64 {
	for line := range bytes.Lines(b) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || string(k) != key {
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64)
		if err != nil {
			return 0
		}
		return n
	}
	return 0
}

// resisterFate says what becomes of a process that will not act on
// SIGTERM under the plan's strategy.
func (p *Plan) resisterFate() string {
	if p.Grace == 0 {
		return "SIGKILLed at once (no grace)"
	}
	return fmt.Sprintf("will be SIGKILLed after the %s grace", p.Grace)
}
