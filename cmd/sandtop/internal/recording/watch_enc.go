package recording

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/sandtop/sandtop/proc"
)

// Since version 2 a K or D payload ends with what a refresh read for
// model.Watch (doc.go "watch"): the cgroup figures of the sandboxes
// (Snapshot.Resources), the wait channels of processes in D and the
// kernel log's OOM kills, so that a replay shows the resources block and
// the oom, stuck and hollow badges with their evidence.

// resourceValues are a CgroupResources' figures in the order they are
// written; floats as their IEEE 754 bits.
func resourceValues(r *proc.CgroupResources) [15]uint64 {
	return [15]uint64{
		r.CPUUsec, r.MemoryBytes, r.MemoryPeak, r.MemoryLimit, math.Float64bits(r.CPULimitCores),
		r.PIDs, r.PIDsLimit, r.IORead, r.IOWrite, r.OOMKills,
		math.Float64bits(r.PressureCPU), math.Float64bits(r.PressureMemory), math.Float64bits(r.PressureIO),
		uint64(r.Have), uint64(r.Asked),
	}
}

func setResourceValues(r *proc.CgroupResources, v [15]uint64) {
	r.CPUUsec, r.MemoryBytes, r.MemoryPeak, r.MemoryLimit = v[0], v[1], v[2], v[3]
	r.CPULimitCores = math.Float64frombits(v[4])
	r.PIDs, r.PIDsLimit, r.IORead, r.IOWrite, r.OOMKills = v[5], v[6], v[7], v[8], v[9]
	r.PressureCPU, r.PressureMemory, r.PressureIO = math.Float64frombits(v[10]), math.Float64frombits(v[11]), math.Float64frombits(v[12])
	r.Have, r.Asked = proc.Figure(v[13]), proc.Figure(v[14])
}

func sortedKeys(m map[proc.CgroupKey]*proc.CgroupResources) []proc.CgroupKey {
	keys := make([]proc.CgroupKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b proc.CgroupKey) int { return cmp.Or(cmp.Compare(a.V2, b.V2), cmp.Compare(a.V1, b.V1)) })
	return keys
}

// watch writes snap's watch trailer: the cgroup figures in full (prev
// nil, a key frame) or those that changed since prev and the cgroups
// gone; the wait channels and OOM kills in full, as they are few.
func (e *encoder) watch(prev, snap *proc.Snapshot) {
	var before map[proc.CgroupKey]*proc.CgroupResources
	if prev != nil {
		before = prev.Resources
	}
	var ups []proc.CgroupKey
	for _, k := range sortedKeys(snap.Resources) {
		if b, ok := before[k]; !ok || *b != *snap.Resources[k] {
			ups = append(ups, k)
		}
	}
	e.body.int(len(ups))
	for _, k := range ups {
		e.str(k.V2)
		e.str(k.V1)
		for _, v := range resourceValues(snap.Resources[k]) {
			e.body.uvarint(v)
		}
	}
	var gone []proc.CgroupKey
	for _, k := range sortedKeys(before) {
		if _, ok := snap.Resources[k]; !ok {
			gone = append(gone, k)
		}
	}
	e.body.int(len(gone))
	for _, k := range gone {
		e.str(k.V2)
		e.str(k.V1)
	}
	pids := make([]int, 0, len(snap.Wchans))
	for pid := range snap.Wchans {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	e.body.int(len(pids))
	for _, pid := range pids {
		e.body.int(pid)
		e.str(snap.Wchans[pid])
	}
	e.body.int(len(snap.OOMKills))
	for _, k := range snap.OOMKills {
		e.body.svarint(k.Time.UnixNano())
		e.body.int(k.PID)
		e.str(k.Comm)
		e.str(k.Constraint)
		e.str(k.TaskMemcg)
		e.str(k.OOMMemcg)
	}
}

// watch reads the trailer watch wrote into snap, the cgroup figures on
// top of prev's (nil for a key frame).
func (d *decoder) watch(in *dec, prev, snap *proc.Snapshot) {
	res := map[proc.CgroupKey]*proc.CgroupResources{}
	if prev != nil {
		for k, r := range prev.Resources {
			res[k] = r // never written: a changed figure gets a new value
		}
	}
	for range in.count() {
		k := proc.CgroupKey{V2: d.str(in), V1: d.str(in)}
		var v [15]uint64
		for i := range v {
			v[i] = in.uvarint()
		}
		r := &proc.CgroupResources{}
		setResourceValues(r, v)
		res[k] = r
	}
	for range in.count() {
		delete(res, proc.CgroupKey{V2: d.str(in), V1: d.str(in)})
	}
	if len(res) > 0 {
		snap.Resources = res
	}
	if n := in.count(); n > 0 {
		snap.Wchans = make(map[int]string, n)
		for range n {
			pid := in.int()
			snap.Wchans[pid] = d.str(in)
		}
	}
	for range in.count() {
		k := proc.OOMKill{Time: time.Unix(0, in.svarint()).UTC(), PID: in.int()}
		k.Comm, k.Constraint, k.TaskMemcg, k.OOMMemcg = d.str(in), d.str(in), d.str(in), d.str(in)
		snap.OOMKills = append(snap.OOMKills, k)
	}
}
