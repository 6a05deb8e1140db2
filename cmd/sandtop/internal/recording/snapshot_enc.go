package recording

import (
	"maps"
	"slices"

	"github.com/sandtop/sandtop/proc"
)

// The bits of a delta's change mask (doc.go), one per Process field, in
// the order the fields follow the mask.
const (
	fState = 1 << iota
	fPPID
	fPGID
	fSID
	fComm
	fArgv
	fExe
	fCwd
	fUID
	fThreads
	fRSS
	fCPU
	fFlags
	fCgroup
	fFreezer
	fNSpid
	fBits
	fAll = fBits<<1 - 1
)

// Process bits and cgroup states as a byte.
const (
	bitKernel  = 1
	bitPartial = 2

	cgFrozen    = 1
	cgPopulated = 2
	cgExists    = 4
	cgGone      = 128
)

// How a delta upsert is encoded.
const (
	upsertNew     = 0
	upsertChanged = 1
)

// encoder turns snapshots into frame payloads. It keeps the string table
// of the current key frame's run and the snapshot last encoded, which the
// next delta is taken against.
type encoder struct {
	ids   map[string]uint64
	fresh []string
	body  enc
	out   enc
	prev  *proc.Snapshot
	// v1 writes version 1's payloads, for the test that older
	// recordings still read.
	v1 bool
}

func (e *encoder) str(s string) {
	id, ok := e.ids[s]
	if !ok {
		id = uint64(len(e.ids))
		e.ids[s] = id
		e.fresh = append(e.fresh, s)
	}
	e.body.uvarint(id)
}

// encode returns the payload of snap as a key frame (key) or as a delta
// against the snapshot encoded before. The slice is reused by the next call.
func (e *encoder) encode(snap *proc.Snapshot, key bool) []byte {
	if key || e.prev == nil {
		e.ids = map[string]uint64{"": 0}
	}
	e.fresh = e.fresh[:0]
	e.body.b = e.body.b[:0]
	e.str(snap.Hostname)
	if key || e.prev == nil {
		e.keyProcs(snap.Procs)
		e.cgroups(nil, snap.Cgroups)
		e.cgroups(nil, snap.Freezers)
		e.keyListeners(snap.Listeners)
	} else {
		e.deltaProcs(e.prev.Procs, snap.Procs)
		e.cgroups(e.prev.Cgroups, snap.Cgroups)
		e.cgroups(e.prev.Freezers, snap.Freezers)
		e.deltaListeners(e.prev.Listeners, snap.Listeners)
	}
	switch {
	case e.v1:
	case key || e.prev == nil:
		e.watch(nil, snap)
	default:
		e.watch(e.prev, snap)
	}
	e.prev = snap
	e.out.b = e.out.b[:0]
	e.out.int(len(e.fresh))
	for _, s := range e.fresh {
		e.out.int(len(s))
		e.out.b = append(e.out.b, s...)
	}
	e.out.b = append(e.out.b, e.body.b...)
	return e.out.b
}

func (e *encoder) keyProcs(ps []*proc.Process) {
	e.body.int(len(ps))
	last := 0
	for _, p := range ps {
		e.body.int(p.PID - last)
		last = p.PID
		e.process(p)
	}
}

// deltaProcs writes the exits and upserts that turn prev into cur. Both
// are sorted by pid. The scanner hands out the same *Process for a process
// whose fields did not change, so most of a refresh is skipped by a
// pointer comparison; a fresh pointer is compared field by field.
func (e *encoder) deltaProcs(prev, cur []*proc.Process) {
	var exits []int
	type upsert struct {
		p, old *proc.Process
		mask   uint64
	}
	var ups []upsert
	i, j := 0, 0
	for i < len(prev) || j < len(cur) {
		switch {
		case j == len(cur) || (i < len(prev) && prev[i].PID < cur[j].PID):
			exits = append(exits, prev[i].PID)
			i++
		case i == len(prev) || cur[j].PID < prev[i].PID:
			ups = append(ups, upsert{p: cur[j]})
			j++
		default:
			a, b := prev[i], cur[j]
			i++
			j++
			if a == b {
				continue
			}
			if a.Start != b.Start {
				ups = append(ups, upsert{p: b})
			} else if m := changes(a, b); m != 0 {
				ups = append(ups, upsert{p: b, old: a, mask: m})
			}
		}
	}
	e.body.int(len(exits))
	last := 0
	for _, pid := range exits {
		e.body.int(pid - last)
		last = pid
	}
	e.body.int(len(ups))
	last = 0
	for _, u := range ups {
		e.body.int(u.p.PID - last)
		last = u.p.PID
		if u.old == nil {
			e.body.byte1(upsertNew)
			e.process(u.p)
			continue
		}
		e.body.byte1(upsertChanged)
		e.body.uvarint(u.mask)
		e.fields(u.p, u.old, u.mask)
	}
}

// changes returns the mask of the fields in which b differs from a.
func changes(a, b *proc.Process) uint64 {
	var m uint64
	set := func(bit uint64, differ bool) {
		if differ {
			m |= bit
		}
	}
	set(fState, a.State != b.State)
	set(fPPID, a.PPID != b.PPID)
	set(fPGID, a.PGID != b.PGID)
	set(fSID, a.SID != b.SID)
	set(fComm, a.Comm != b.Comm)
	set(fArgv, !slices.Equal(a.Argv, b.Argv) || (a.Argv == nil) != (b.Argv == nil))
	set(fExe, a.Exe != b.Exe)
	set(fCwd, a.Cwd != b.Cwd)
	set(fUID, a.UID != b.UID)
	set(fThreads, a.Threads != b.Threads)
	set(fRSS, a.RSS != b.RSS)
	set(fCPU, a.CPUTicks != b.CPUTicks)
	set(fFlags, a.Flags != b.Flags)
	set(fCgroup, a.Cgroup != b.Cgroup)
	set(fFreezer, a.Freezer != b.Freezer)
	set(fNSpid, !slices.Equal(a.NSpid, b.NSpid))
	set(fBits, bits(a) != bits(b))
	return m
}

func bits(p *proc.Process) byte {
	var b byte
	if p.Kernel {
		b |= bitKernel
	}
	if p.Partial {
		b |= bitPartial
	}
	return b
}

// process writes every field of p.
func (e *encoder) process(p *proc.Process) {
	e.body.uvarint(p.Start)
	e.fields(p, nil, fAll)
}

// fields writes the fields of p named by mask, in bit order. The CPU ticks
// are written as the difference from old when there is an old.
func (e *encoder) fields(p, old *proc.Process, mask uint64) {
	b := &e.body
	if mask&fState != 0 {
		b.byte1(p.State)
	}
	if mask&fPPID != 0 {
		b.int(p.PPID)
	}
	if mask&fPGID != 0 {
		b.int(p.PGID)
	}
	if mask&fSID != 0 {
		b.int(p.SID)
	}
	if mask&fComm != 0 {
		e.str(p.Comm)
	}
	if mask&fArgv != 0 {
		b.int(len(p.Argv))
		for _, a := range p.Argv {
			e.str(a)
		}
	}
	if mask&fExe != 0 {
		e.str(p.Exe)
	}
	if mask&fCwd != 0 {
		e.str(p.Cwd)
	}
	if mask&fUID != 0 {
		b.svarint(int64(p.UID))
	}
	if mask&fThreads != 0 {
		b.int(p.Threads)
	}
	if mask&fRSS != 0 {
		b.uvarint(p.RSS)
	}
	if mask&fCPU != 0 {
		if old != nil {
			b.svarint(int64(p.CPUTicks - old.CPUTicks))
		} else {
			b.uvarint(p.CPUTicks)
		}
	}
	if mask&fFlags != 0 {
		b.uvarint(uint64(p.Flags))
	}
	if mask&fCgroup != 0 {
		e.str(p.Cgroup)
	}
	if mask&fFreezer != 0 {
		e.str(p.Freezer)
	}
	if mask&fNSpid != 0 {
		b.int(len(p.NSpid))
		for _, n := range p.NSpid {
			b.int(n)
		}
	}
	if mask&fBits != 0 {
		b.byte1(bits(p))
	}
}

func cgroupByte(s proc.CgroupState) byte {
	var b byte
	if s.Frozen {
		b |= cgFrozen
	}
	if s.Populated {
		b |= cgPopulated
	}
	if s.Exists {
		b |= cgExists
	}
	return b
}

// cgroups writes the entries of cur that differ from prev, and the paths
// of prev that cur no longer has (all of cur when prev is nil), sorted so
// that the same maps always give the same bytes.
func (e *encoder) cgroups(prev, cur map[string]proc.CgroupState) {
	type change struct {
		path string
		b    byte
	}
	var ch []change
	if !maps.Equal(prev, cur) {
		for path, s := range cur {
			if old, ok := prev[path]; !ok || old != s {
				ch = append(ch, change{path, cgroupByte(s)})
			}
		}
		for path := range prev {
			if _, ok := cur[path]; !ok {
				ch = append(ch, change{path, cgGone})
			}
		}
		slices.SortFunc(ch, func(a, b change) int {
			switch {
			case a.path < b.path:
				return -1
			case a.path > b.path:
				return 1
			}
			return 0
		})
	}
	e.body.int(len(ch))
	for _, c := range ch {
		e.str(c.path)
		e.body.byte1(c.b)
	}
}

func (e *encoder) keyListeners(cur map[string]bool) {
	if cur == nil {
		e.body.byte1(0)
		return
	}
	e.body.byte1(1)
	e.paths(slices.Sorted(maps.Keys(cur)))
}

func (e *encoder) deltaListeners(prev, cur map[string]bool) {
	switch {
	case (prev == nil) == (cur == nil) && maps.Equal(prev, cur):
		e.body.byte1(0)
	case cur == nil:
		e.body.byte1(1)
	default:
		e.body.byte1(2)
		var added, removed []string
		for p := range cur {
			if !prev[p] {
				added = append(added, p)
			}
		}
		for p := range prev {
			if !cur[p] {
				removed = append(removed, p)
			}
		}
		slices.Sort(added)
		slices.Sort(removed)
		e.paths(added)
		e.paths(removed)
	}
}

func (e *encoder) paths(ps []string) {
	e.body.int(len(ps))
	for _, p := range ps {
		e.str(p)
	}
}
