package recording

import (
	"fmt"
	"maps"
	"time"

	"github.com/sandtop/sandtop/proc"
)

// decoder turns frame payloads back into snapshots: the inverse of
// encoder. It keeps the string table and the last snapshot it decoded, so
// it must be fed a key frame and then the deltas after it, in order.
type decoder struct {
	hdr   *Header
	table []string
	snap  *proc.Snapshot
}

// apply decodes one K or D payload. Its processes come in rising pid
// order (see pid), as Snapshot.Proc needs them.
func (d *decoder) apply(kind byte, payload []byte, at time.Time) (*proc.Snapshot, error) {
	in := &dec{b: payload}
	if kind == kindKey {
		d.table = append(d.table[:0], "")
	} else if d.snap == nil {
		return nil, fmt.Errorf("delta without a key frame before it")
	}
	n := in.count()
	for range n {
		s := in.bytes(in.int())
		d.table = append(d.table, string(s))
	}
	snap := &proc.Snapshot{
		Time:       at,
		BootTime:   d.hdr.BootTime,
		ClockTicks: d.hdr.ClockTicks,
		PageSize:   d.hdr.PageSize,
		Self:       d.hdr.SelfPID,
		Mounts:     d.hdr.Mounts.proc(),
	}
	snap.Hostname = d.str(in)
	if kind == kindKey {
		snap.Procs = d.keyProcs(in)
		snap.Cgroups = d.cgroups(in, nil)
		snap.Freezers = d.cgroups(in, nil)
		snap.Listeners = d.keyListeners(in)
	} else {
		snap.Procs = d.deltaProcs(in, d.snap.Procs)
		snap.Cgroups = d.cgroups(in, d.snap.Cgroups)
		snap.Freezers = d.cgroups(in, d.snap.Freezers)
		snap.Listeners = d.deltaListeners(in, d.snap.Listeners)
	}
	if d.hdr.FormatVersion >= 2 {
		prev := d.snap
		if kind == kindKey {
			prev = nil
		}
		d.watch(in, prev, snap)
	}
	if in.err == nil && len(in.b) != 0 {
		in.fail(fmt.Errorf("%w: %d bytes after the end", errBad, len(in.b)))
	}
	if in.err != nil {
		return nil, in.err
	}
	for _, p := range snap.Procs {
		if p.Partial {
			snap.PartlyUnreadable++
		}
	}
	d.snap = snap
	return snap, nil
}

func (d *decoder) str(in *dec) string {
	i := in.uvarint()
	if i >= uint64(len(d.table)) {
		in.fail(fmt.Errorf("%w: string %d of %d", errBad, i, len(d.table)))
		return ""
	}
	return d.table[i]
}

// pid reads a pid-gap; pids must rise strictly.
func pid(in *dec, last int) int {
	gap := in.int()
	if gap == 0 || last+gap > 1<<31-1 {
		in.fail(fmt.Errorf("%w: pid gap %d after %d", errBad, gap, last))
		return last + 1
	}
	return last + gap
}

func (d *decoder) keyProcs(in *dec) []*proc.Process {
	n := in.count()
	ps := make([]*proc.Process, 0, n)
	last := 0
	for range n {
		last = pid(in, last)
		ps = append(ps, d.process(in, last))
	}
	return ps
}

func (d *decoder) process(in *dec, pid int) *proc.Process {
	p := &proc.Process{PID: pid, Start: in.uvarint()}
	d.fields(in, p, fAll, false)
	return p
}

func (d *decoder) fields(in *dec, p *proc.Process, mask uint64, cpuDelta bool) {
	if mask&^fAll != 0 {
		in.fail(fmt.Errorf("%w: change mask %#x", errBad, mask))
		return
	}
	if mask&fState != 0 {
		p.State = in.byte1()
	}
	if mask&fPPID != 0 {
		p.PPID = in.int()
	}
	if mask&fPGID != 0 {
		p.PGID = in.int()
	}
	if mask&fSID != 0 {
		p.SID = in.int()
	}
	if mask&fComm != 0 {
		p.Comm = d.str(in)
	}
	if mask&fArgv != 0 {
		p.Argv = nil
		if n := in.count(); n > 0 {
			p.Argv = make([]string, n)
			for i := range p.Argv {
				p.Argv[i] = d.str(in)
			}
		}
	}
	if mask&fExe != 0 {
		p.Exe = d.str(in)
	}
	if mask&fCwd != 0 {
		p.Cwd = d.str(in)
	}
	if mask&fUID != 0 {
		uid := in.svarint()
		if uid < -1 || uid > 1<<32-1 {
			in.fail(fmt.Errorf("%w: uid %d", errBad, uid))
		}
		p.UID = int(uid)
	}
	if mask&fThreads != 0 {
		p.Threads = in.int()
	}
	if mask&fRSS != 0 {
		p.RSS = in.uvarint()
	}
	if mask&fCPU != 0 {
		if cpuDelta {
			p.CPUTicks += uint64(in.svarint())
		} else {
			p.CPUTicks = in.uvarint()
		}
	}
	if mask&fFlags != 0 {
		p.Flags = uint(in.uvarint())
	}
	if mask&fCgroup != 0 {
		p.Cgroup = d.str(in)
	}
	if mask&fFreezer != 0 {
		p.Freezer = d.str(in)
	}
	if mask&fNSpid != 0 {
		p.NSpid = nil
		if n := in.count(); n > 0 {
			p.NSpid = make([]int, n)
			for i := range p.NSpid {
				p.NSpid[i] = in.int()
			}
		}
	}
	if mask&fBits != 0 {
		b := in.byte1()
		if b&^(bitKernel|bitPartial) != 0 {
			in.fail(fmt.Errorf("%w: process bits %#x", errBad, b))
		}
		p.Kernel, p.Partial = b&bitKernel != 0, b&bitPartial != 0
	}
}

// deltaProcs applies exits and upserts to prev. An unchanged process keeps
// its *Process, as the scanner's snapshots do, so grouping the result can
// reuse what it knew.
func (d *decoder) deltaProcs(in *dec, prev []*proc.Process) []*proc.Process {
	exits := make(map[int]bool)
	n := in.count()
	last := 0
	for range n {
		last = pid(in, last)
		exits[last] = true
	}
	out := make([]*proc.Process, 0, len(prev)+8)
	i := 0
	// copyUpTo keeps the processes of prev below pid that did not exit.
	copyUpTo := func(pid int) {
		for ; i < len(prev) && prev[i].PID < pid; i++ {
			if exits[prev[i].PID] {
				delete(exits, prev[i].PID)
			} else {
				out = append(out, prev[i])
			}
		}
	}
	n = in.count()
	last = 0
	for range n {
		if in.err != nil {
			return nil
		}
		last = pid(in, last)
		copyUpTo(last)
		var old *proc.Process
		if i < len(prev) && prev[i].PID == last {
			old = prev[i]
			i++
		}
		if exits[last] {
			in.fail(fmt.Errorf("%w: pid %d both exits and changes", errBad, last))
			return nil
		}
		switch how := in.byte1(); how {
		case upsertNew:
			out = append(out, d.process(in, last))
		case upsertChanged:
			if old == nil {
				in.fail(fmt.Errorf("%w: change to pid %d, which the frame before does not have", errBad, last))
				return nil
			}
			p := *old
			d.fields(in, &p, in.uvarint(), true)
			out = append(out, &p)
		default:
			in.fail(fmt.Errorf("%w: upsert kind %d", errBad, how))
			return nil
		}
	}
	copyUpTo(1 << 31)
	if len(exits) > 0 && in.err == nil {
		in.fail(fmt.Errorf("%w: %d exits of pids the frame before does not have", errBad, len(exits)))
	}
	return out
}

func stateOf(b byte) proc.CgroupState {
	return proc.CgroupState{Frozen: b&cgFrozen != 0, Populated: b&cgPopulated != 0, Exists: b&cgExists != 0}
}

// cgroups applies a list of cgroup changes to prev (nil for a key frame).
// An unchanged map is handed out again, as the scanner does.
func (d *decoder) cgroups(in *dec, prev map[string]proc.CgroupState) map[string]proc.CgroupState {
	n := in.count()
	if n == 0 && prev != nil {
		return prev
	}
	m := make(map[string]proc.CgroupState, len(prev)+n)
	maps.Copy(m, prev)
	for range n {
		path := d.str(in)
		switch b := in.byte1(); {
		case b == cgGone:
			delete(m, path)
		case b&^(cgFrozen|cgPopulated|cgExists) != 0:
			in.fail(fmt.Errorf("%w: cgroup state %#x", errBad, b))
		default:
			m[path] = stateOf(b)
		}
	}
	return m
}

func (d *decoder) keyListeners(in *dec) map[string]bool {
	switch b := in.byte1(); b {
	case 0:
		return nil
	case 1:
		m := map[string]bool{}
		d.addPaths(in, m, true)
		return m
	default:
		in.fail(fmt.Errorf("%w: listeners %d", errBad, b))
		return nil
	}
}

func (d *decoder) deltaListeners(in *dec, prev map[string]bool) map[string]bool {
	switch b := in.byte1(); b {
	case 0:
		return prev
	case 1:
		return nil
	case 2:
		m := maps.Clone(prev)
		if m == nil {
			m = map[string]bool{}
		}
		d.addPaths(in, m, true)
		d.addPaths(in, m, false)
		return m
	default:
		in.fail(fmt.Errorf("%w: listeners %d", errBad, b))
		return nil
	}
}

func (d *decoder) addPaths(in *dec, m map[string]bool, add bool) {
	n := in.count()
	for range n {
		p := d.str(in)
		if add {
			m[p] = true
		} else {
			delete(m, p)
		}
	}
}
