package teardown

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// The kernel says which processes will not act on SIGTERM: a signal set to
// SIG_IGN is in SigIgn, a blocked one in SigBlk, a handled one in SigCgt
// (/proc/PID/status, proc(5); hex masks, bit n-1 for signal n). The init
// of a pid namespace gets from outside it only the signals it handles or
// blocks (and SIGKILL): the kernel drops the rest (pid_namespaces(7)), so
// an application run as a container's pid 1 with no SIGTERM handler
// never sees SIGTERM. A blocked signal still reaches a process that reads
// it from a signalfd or waits for it in sigtimedwait(2), and that one is
// not named. The plan names the others, so the operator knows before
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
		dir := filepath.Join(procRoot, strconv.Itoa(m.PID))
		b, err := os.ReadFile(filepath.Join(dir, "status"))
		if err != nil {
			continue
		}
		sig := cmp.Or(m.Halt, unix.SIGTERM)
		bit, name := uint64(1)<<(sig-1), model.SignalName(sig)
		blocked := statusMask(b, "SigBlk")&bit != 0
		var resists string
		switch {
		case statusMask(b, "SigIgn")&bit != 0:
			resists = "ignores " + name
		case statusMask(b, "SigCgt")&bit != 0:
			// A handler acts on it.
		case !blocked && !namespaceInit(b):
			// The default action: it dies of it.
		case takesSignals(dir, bit):
			// A signalfd or sigtimedwait(2) takes it.
		case blocked:
			resists = "blocks " + name
		default:
			resists = "gets no " + name + " as pid 1 of its namespace without a handler"
		}
		// Read after the others: a process that has the member's identity
		// now had it when they were read (the view planned from may be a
		// refresh old, and the pid someone else's since).
		if now, _, err := proc.ReadIdentity(procRoot, m.PID); err != nil || now != m.Identity {
			continue
		}
		m.Resists = resists
	}
}

// maxSignalfdScan bounds the descriptors takesSignals looks through.
const maxSignalfdScan = 256

// A process that waits for its signals in sigtimedwait(2) shows them
// blocked and waits for nothing while it is awake between two waits:
// takesSignals looks at it waitSamples times, waitGap apart.
const (
	waitSamples = 5
	waitGap     = 10 * time.Millisecond
)

// takesSignals reports whether the process at dir may take the signal
// whose mask bit is bit without a handler: from a signalfd whose mask has
// it (fdinfo "sigmask:"), or in sigtimedwait(2), which unblocks the
// signals it waits for while it sleeps (so SigBlk shows them clear) and
// whose set no file shows. busybox's init waits for SIGTERM and its halt
// signals so; systemd reads its signals from a signalfd.
func takesSignals(dir string, bit uint64) bool {
	fdinfo := filepath.Join(dir, "fdinfo")
	if f, err := os.Open(fdinfo); err == nil {
		names, _ := f.Readdirnames(maxSignalfdScan)
		f.Close()
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(fdinfo, n))
			if err == nil && statusMask(b, "sigmask")&bit != 0 {
				return true
			}
		}
	}
	for i := range waitSamples {
		if i > 0 {
			time.Sleep(waitGap)
		}
		w, err := os.ReadFile(filepath.Join(dir, "wchan"))
		if err != nil {
			return false
		}
		if strings.Contains(string(w), "sigtimedwait") {
			return true
		}
	}
	return false
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
