package teardown

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	// pending are the members that would resist unless they take the
	// signal in sigtimedwait(2), which waitingRounds tells.
	var pending []undecided
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
		case signalfdTakes(dir, bit):
			// It reads the signal from a signalfd.
		case blocked:
			pending = append(pending, undecided{m, dir, "blocks " + name})
		default:
			pending = append(pending, undecided{m, dir, "gets no " + name + " as pid 1 of its namespace without a handler"})
		}
		if resists != "" && stillMember(procRoot, m) {
			m.Resists = resists
		}
	}
	for _, u := range waitingRounds(pending) {
		if stillMember(procRoot, u.m) {
			u.m.Resists = u.resists
		}
	}
}

// stillMember reports whether m's pid still has m's identity. Read after
// the files that judged it: a process that has the member's identity now
// had it when they were read (the view planned from may be a refresh old,
// and the pid someone else's since).
func stillMember(procRoot string, m *Member) bool {
	now, _, err := proc.ReadIdentity(procRoot, m.PID)
	return err == nil && now == m.Identity
}

// undecided is a member that resists its signal unless it waits for it
// in sigtimedwait(2).
type undecided struct {
	m       *Member
	dir     string
	resists string
}

// maxSignalfdScan bounds the descriptors signalfdTakes looks through.
const maxSignalfdScan = 256

// signalfdTakes reports whether the process at dir reads the signal
// whose mask bit is bit from a signalfd (its fdinfo's "sigmask:" has it),
// as systemd reads its signals.
func signalfdTakes(dir string, bit uint64) bool {
	fdinfo := filepath.Join(dir, "fdinfo")
	f, err := os.Open(fdinfo)
	if err != nil {
		return false
	}
	names, _ := f.Readdirnames(maxSignalfdScan)
	f.Close()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(fdinfo, n))
		if err == nil && statusMask(b, "sigmask")&bit != 0 {
			return true
		}
	}
	return false
}

// A process that waits for its signals in sigtimedwait(2) shows them
// blocked while it is awake between two waits, and clear while it sleeps
// in one (the kernel unblocks what it waits for); no file shows the set
// it waits for. busybox's init waits for SIGTERM and its halt signals so.
// waitingRounds looks waitRounds times, waitGap apart, at the wchan of
// each process in us, and returns those never seen in sigtimedwait: a
// plan waits at most waitRounds × waitGap, however many there are.
const (
	waitRounds = 5
	waitGap    = 10 * time.Millisecond
)

func waitingRounds(us []undecided) []undecided {
	for round := 0; round < waitRounds && len(us) > 0; round++ {
		if round > 0 {
			time.Sleep(waitGap)
		}
		us = slices.DeleteFunc(us, func(u undecided) bool {
			w, err := os.ReadFile(filepath.Join(u.dir, "wchan"))
			return err == nil && strings.Contains(string(w), "sigtimedwait")
		})
	}
	return us
}

// namespaceInit reports whether a /proc/PID/status is that of the init
// of a pid namespace below the reader's.
func namespaceInit(status []byte) bool {
	_, nspid, err := proc.ParseStatusIDs(status)
	return err == nil && proc.NamespaceInit(nspid)
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
