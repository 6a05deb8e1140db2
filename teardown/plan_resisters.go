package teardown

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc"
)

// The kernel says which processes will not act on SIGTERM: a signal set to
// SIG_IGN is in SigIgn, a blocked one in SigBlk (/proc/PID/status,
// proc(5); both hex masks, bit n-1 for signal n). The plan names them, so
// the operator knows before confirming who will be SIGKILLed after the
// grace, and the grace log names them while it waits.

// termBit is SIGTERM's bit in SigIgn and SigBlk.
const termBit = uint64(1) << (unix.SIGTERM - 1)

// noteResisters reads, for each live member, whether it ignores or blocks
// SIGTERM, from procRoot. It does I/O: planners that must not (a view
// being drawn) leave PlanOptions.ProcRoot empty and skip it.
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
		ign, blk := statusMask(b, "SigIgn"), statusMask(b, "SigBlk")
		switch {
		case ign&termBit != 0:
			m.Resists = "ignores SIGTERM"
		case blk&termBit != 0:
			m.Resists = "blocks SIGTERM"
		}
	}
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
