package recording

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/proc"
)

// host is a fake host that changes the way real ones do, for snapshots
// whose every field the test controls. Like the scanner, it hands out the
// same *Process for a process that did not change.
type host struct {
	rng   *rand.Rand
	now   time.Time
	procs map[int]*proc.Process
	cg    map[string]proc.CgroupState
	lis   map[string]bool
	next  int
	tick  uint64
	// What a Watcher read: cgroup figures, wait channels, OOM kills.
	res    map[proc.CgroupKey]*proc.CgroupResources
	wchans map[int]string
	ooms   []proc.OOMKill
}

func newHost(seed uint64, n int) *host {
	h := &host{
		rng:   rand.New(rand.NewPCG(seed, 1)),
		now:   time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC),
		procs: map[int]*proc.Process{},
		cg:    map[string]proc.CgroupState{"/": {Exists: true, Populated: true}},
		lis:   map[string]bool{"/run/containerd/containerd.sock": true},
		next:  100,
	}
	h.procs[1] = &proc.Process{PID: 1, PPID: 0, State: 'S', Comm: "init", Argv: []string{"/sbin/init"}, UID: 0, Threads: 1, Cgroup: "/", Start: 1}
	h.procs[2] = &proc.Process{PID: 2, State: 'S', Comm: "kthreadd", Kernel: true, Flags: 0x200040, Threads: 1, UID: 0, Start: 1}
	for range n {
		h.birth()
	}
	return h
}

var argvs = [][]string{
	{"containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "abc", "-address", "/run/containerd/containerd.sock"},
	{"firecracker", "--api-sock", "/run/vm0/sock/7d1e/api.sock"},
	{"sleep", "infinity"},
	{"bash", "--norc"},
	{"caf\xe9", ""},
	nil,
}

func (h *host) birth() {
	h.next += 1 + h.rng.IntN(3)
	pid := h.next
	a := argvs[h.rng.IntN(len(argvs))]
	cg := fmt.Sprintf("/box/%d", h.rng.IntN(5))
	if _, ok := h.cg[cg]; !ok {
		h.cg = clone(h.cg)
		h.cg[cg] = proc.CgroupState{Exists: true, Populated: true}
	}
	p := &proc.Process{
		PID: pid, PPID: 1, PGID: pid, SID: pid, State: 'S', Comm: "c" + fmt.Sprint(pid%7),
		Argv: a, Exe: "/usr/bin/x", Cwd: "/var/lib/x", UID: h.rng.IntN(3) - 1, Threads: 1 + h.rng.IntN(4),
		RSS: uint64(h.rng.IntN(1000)) * 4096, CPUTicks: uint64(h.rng.IntN(100)), Cgroup: cg,
		Start: h.tick, Partial: h.rng.IntN(10) == 0,
	}
	if h.rng.IntN(4) == 0 {
		p.NSpid = []int{pid, 1 + h.rng.IntN(5)}
	}
	if h.rng.IntN(6) == 0 {
		p.Freezer = "/freezer/" + fmt.Sprint(h.rng.IntN(3))
	}
	h.procs[pid] = p
}

func clone[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// step changes the host the way a second of a busy one does.
func (h *host) step() *proc.Snapshot {
	h.now = h.now.Add(time.Second)
	h.tick += 100
	for pid, p := range h.procs {
		if pid <= 2 {
			continue
		}
		switch r := h.rng.IntN(40); {
		case r == 0:
			delete(h.procs, pid)
		case r < 6:
			q := *p
			q.CPUTicks += uint64(h.rng.IntN(50))
			q.RSS = uint64(h.rng.IntN(1000)) * 4096
			q.State = "RSDZT"[h.rng.IntN(5)]
			h.procs[pid] = &q
		case r == 6:
			q := *p
			q.Argv, q.Comm, q.Exe = argvs[h.rng.IntN(len(argvs))], "exec", "/bin/new"
			q.PPID, q.PGID = 1+h.rng.IntN(pid), h.rng.IntN(pid)
			q.Cgroup = "/moved"
			q.NSpid = nil
			q.Partial = !q.Partial
			h.procs[pid] = &q
		case r == 7:
			// pid reuse: a new identity at the same pid
			q := *p
			q.Start = h.tick
			q.CPUTicks = 0
			h.procs[pid] = &q
		}
	}
	for range h.rng.IntN(4) {
		h.birth()
	}
	if h.rng.IntN(5) == 0 {
		h.cg = clone(h.cg)
		for k, v := range h.cg {
			v.Frozen = !v.Frozen
			h.cg[k] = v
			break
		}
	}
	if h.rng.IntN(5) == 0 {
		h.cg = clone(h.cg)
		delete(h.cg, fmt.Sprintf("/box/%d", h.rng.IntN(5)))
	}
	switch h.rng.IntN(8) {
	case 0:
		h.lis = nil
	case 1:
		h.lis = clone(h.lis)
		h.lis[fmt.Sprintf("@sock%d", h.rng.IntN(4))] = true
	case 2:
		h.lis = clone(h.lis)
		for k := range h.lis {
			delete(h.lis, k)
			break
		}
	}
	h.watchStep()
	return h.snapshot()
}

// watchStep changes what a Watcher would have read: a cgroup's figures
// move, a cgroup appears or goes, a process waits in D, the kernel log
// gains an OOM kill.
func (h *host) watchStep() {
	res := map[proc.CgroupKey]*proc.CgroupResources{}
	for k, r := range h.res {
		res[k] = r
	}
	k := proc.CgroupKey{V2: fmt.Sprintf("/box/%d", h.rng.IntN(5)), V1: []string{"", "/v1box"}[h.rng.IntN(2)]}
	switch h.rng.IntN(4) {
	case 0:
		delete(res, k)
	case 1, 2:
		res[k] = &proc.CgroupResources{
			Asked: proc.AllFigures, Have: proc.Figure(h.rng.IntN(int(proc.AllFigures) + 1)),
			CPUUsec: h.rng.Uint64(), MemoryBytes: uint64(h.rng.IntN(1 << 30)), MemoryLimit: 1 << 28,
			CPULimitCores: 1.5, OOMKills: uint64(h.rng.IntN(3)), PressureMemory: h.rng.Float64() * 100,
		}
	}
	h.res = res
	if len(h.res) == 0 {
		h.res = nil
	}
	h.wchans = nil
	if h.rng.IntN(3) == 0 {
		h.wchans = map[int]string{3 + h.rng.IntN(10): "fuse_wait_answer"}
	}
	if h.rng.IntN(10) == 0 {
		h.ooms = append(h.ooms, proc.OOMKill{Time: h.now.Add(-time.Second), PID: 4000 + h.rng.IntN(100), Comm: "stress\\x1b", Constraint: "CONSTRAINT_MEMCG", TaskMemcg: "/box/1", OOMMemcg: "/box/1"})
	}
}

func (h *host) snapshot() *proc.Snapshot {
	s := &proc.Snapshot{
		Time: h.now, BootTime: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), ClockTicks: 100, PageSize: 4096,
		Hostname: "worker-17", Self: 4242,
		Cgroups: h.cg, Freezers: map[string]proc.CgroupState{"/freezer/0": {Exists: true, Populated: true}},
		Listeners: h.lis,
		Mounts:    proc.Mounts{Unified: "/sys/fs/cgroup/unified", Freezer: "/sys/fs/cgroup/freezer"},
		Resources: h.res, Wchans: h.wchans, OOMKills: h.ooms,
	}
	for pid := 1; pid <= h.next; pid++ {
		if p := h.procs[pid]; p != nil {
			s.Procs = append(s.Procs, p)
			if p.Partial {
				s.PartlyUnreadable++
			}
		}
	}
	return s
}

func testHeader(first *proc.Snapshot, keyEvery time.Duration) *Header {
	return NewHeader(first, "/proc", "test", "sandtop record", "# rules\n", time.Second, keyEvery)
}

// record writes n snapshots of a changing fake host and returns the file
// and the snapshots.
func record(t testing.TB, seed uint64, n int, keyEvery time.Duration) ([]byte, []*proc.Snapshot) {
	t.Helper()
	h := newHost(seed, 50)
	snaps := []*proc.Snapshot{h.snapshot()}
	for len(snaps) < n {
		snaps = append(snaps, h.step())
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(snaps[0], keyEvery), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close("test"); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), snaps
}

// sameSnapshot compares every field a recording keeps.
func sameSnapshot(t testing.TB, i int, got, want *proc.Snapshot) {
	t.Helper()
	if !got.Time.Equal(want.Time) || !got.BootTime.Equal(want.BootTime) {
		t.Fatalf("frame %d: time %v boot %v, want %v %v", i, got.Time, got.BootTime, want.Time, want.BootTime)
	}
	g, w := *got, *want
	g.Time, w.Time, g.BootTime, w.BootTime = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if len(g.Procs) != len(w.Procs) {
		t.Fatalf("frame %d: %d processes, want %d", i, len(g.Procs), len(w.Procs))
	}
	for j := range g.Procs {
		if !reflect.DeepEqual(g.Procs[j], w.Procs[j]) {
			t.Fatalf("frame %d: process %d:\n got %+v\nwant %+v", i, j, *g.Procs[j], *w.Procs[j])
		}
	}
	for _, p := range got.Procs {
		if got.Proc(p.PID) != p {
			t.Fatalf("frame %d: Proc(%d) is not the process of Procs", i, p.PID)
		}
	}
	g.Procs, w.Procs = nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("frame %d:\n got %+v\nwant %+v", i, g, w)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, keyEvery := range []time.Duration{0, 5 * time.Second, time.Hour} {
		t.Run(fmt.Sprint(keyEvery), func(t *testing.T) {
			file, snaps := record(t, uint64(keyEvery), 60, keyEvery)
			r, err := NewReader(bytes.NewReader(file), int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Damage(); err != nil {
				t.Fatalf("damage in a clean file: %v", err)
			}
			if r.Len() != len(snaps) || r.End() == nil || r.End().Frames != len(snaps) {
				t.Fatalf("%d frames, end %+v; want %d", r.Len(), r.End(), len(snaps))
			}
			if r.Header.Host != "worker-17" || r.Header.SelfPID != 4242 || r.Header.Rules != "# rules\n" || r.Header.FormatVersion != FormatVersion {
				t.Fatalf("header %+v", r.Header)
			}
			// In order, then backwards (every decode restarts at a key
			// frame), then at random.
			order := make([]int, 0, 3*len(snaps))
			for i := range snaps {
				order = append(order, i)
			}
			for i := len(snaps) - 1; i >= 0; i-- {
				order = append(order, i)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range len(snaps) {
				order = append(order, rng.IntN(len(snaps)))
			}
			var prev *proc.Snapshot
			for n, i := range order {
				got, err := r.Snapshot(i)
				if err != nil {
					t.Fatal(err)
				}
				sameSnapshot(t, i, got, snaps[i])
				// Stepping forward shares unchanged processes, as the
				// scanner does, which lets grouping reuse its last answer.
				if n > 0 && n < len(snaps) && !r.Frames()[i].Key {
					shared := 0
					for _, p := range got.Procs {
						if prev.Proc(p.PID) == p {
							shared++
						}
					}
					if shared == 0 {
						t.Fatalf("frame %d shares no process with the frame before", i)
					}
				}
				prev = got
			}
			keys := 0
			for _, f := range r.Frames() {
				if f.Key {
					keys++
				}
			}
			t.Logf("%d frames, %d key frames, %d bytes", r.Len(), keys, len(file))
			if keyEvery == 0 && keys != len(snaps) || keyEvery == time.Hour && keys != 1 || keyEvery == 5*time.Second && keys != 12 {
				t.Fatalf("%d key frames with one every %v", keys, keyEvery)
			}
		})
	}
}

// cutPoints are the offsets at which the tests cut or damage a file: the
// start of every frame, the byte after it, the middle of its payload and
// its last byte, and every byte of the preamble and header.
func cutPoints(frames []Frame, size int) []int {
	var at []int
	for i := 0; i < int(frames[0].Offset); i++ {
		at = append(at, i)
	}
	for _, f := range frames {
		o := int(f.Offset)
		at = append(at, o, o+1, o+4, o+envelopeHead, o+int(f.Size)/2, o+int(f.Size)-1)
	}
	last := frames[len(frames)-1]
	for i := int(last.Offset + last.Size); i < size; i++ {
		at = append(at, i)
	}
	return at
}

// TestCutShort cuts a recording at every frame boundary and inside every
// frame: the reader keeps every whole frame before the cut, says where and
// why it stopped, and reads those frames exactly.
func TestCutShort(t *testing.T) {
	file, snaps := record(t, 7, 12, 4*time.Second)
	full, err := NewReader(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	frames := full.Frames()
	dataStart := frames[0].Offset
	for _, cut := range cutPoints(frames, len(file)) {
		r, err := NewReader(bytes.NewReader(file[:cut]), int64(cut))
		if cut < int(dataStart) {
			// The header is the one thing a recording cannot lose.
			if err == nil {
				t.Fatalf("cut at %d inside the header: no error", cut)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		whole := 0
		for _, f := range frames {
			if f.Offset+f.Size <= int64(cut) {
				whole++
			}
		}
		if r.Len() != whole {
			t.Fatalf("cut at %d: %d frames, want %d", cut, r.Len(), whole)
		}
		d := r.Damage()
		if d == nil {
			t.Fatalf("cut at %d: no damage reported", cut)
		}
		boundary := cut == int(dataStart) || (whole > 0 && frames[whole-1].Offset+frames[whole-1].Size == int64(cut))
		if want := "not closed"; boundary && !strings.Contains(d.Error(), want) {
			t.Fatalf("cut at boundary %d: %v, want %q", cut, d, want)
		}
		if want := "ends inside"; !boundary && !strings.Contains(d.Error(), want) {
			t.Fatalf("cut at %d: %v, want %q", cut, d, want)
		}
		if err := r.Verify(); err == nil {
			t.Fatalf("cut at %d: Verify says nothing", cut)
		}
		for i := range r.Len() {
			s, err := r.Snapshot(i)
			if err != nil {
				t.Fatalf("cut at %d, frame %d: %v", cut, i, err)
			}
			sameSnapshot(t, i, s, snaps[i])
		}
	}
}

// TestFlippedBytes damages a recording one byte at a time (the fuzz target
// tries the rest): the reader never panics, and keeps exactly the frames
// before the damaged one.
func TestFlippedBytes(t *testing.T) {
	file, snaps := record(t, 9, 10, 3*time.Second)
	full, err := NewReader(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	frames := full.Frames()
	for _, i := range cutPoints(frames, len(file)) {
		bad := bytes.Clone(file)
		bad[i] ^= 0x5a
		r, err := NewReader(bytes.NewReader(bad), int64(len(bad)))
		if i < int(frames[0].Offset) {
			if err == nil {
				t.Fatalf("byte %d of the header flipped: no error", i)
			}
			continue
		}
		if err != nil {
			t.Fatalf("byte %d: %v", i, err)
		}
		hit := len(frames) // the end frame
		for j, f := range frames {
			if int64(i) >= f.Offset && int64(i) < f.Offset+f.Size {
				hit = j
			}
		}
		_ = r.Verify()
		if r.Len() != hit || r.Damage() == nil {
			t.Fatalf("byte %d (frame %d) flipped: %d frames kept, damage %v", i, hit, r.Len(), r.Damage())
		}
		for j := range r.Len() {
			s, err := r.Snapshot(j)
			if err != nil {
				t.Fatal(err)
			}
			sameSnapshot(t, j, s, snaps[j])
		}
	}
}

func TestNotARecording(t *testing.T) {
	for name, data := range map[string][]byte{
		"empty":   nil,
		"text":    []byte("hello, world\n"),
		"version": append([]byte(magic), 9, 0, 0, 0),
	} {
		if _, err := NewReader(bytes.NewReader(data), int64(len(data))); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestMaxSize(t *testing.T) {
	h := newHost(3, 200)
	first := h.snapshot()
	var buf bytes.Buffer
	const limit = 16 << 10
	w, err := NewWriter(&buf, testHeader(first, time.Minute), limit)
	if err != nil {
		t.Fatal(err)
	}
	s := first
	n := 0
	for ; n < 10000; n++ {
		if err = w.Write(s); err != nil {
			break
		}
		s = h.step()
	}
	if err != ErrMaxSize {
		t.Fatalf("after %d frames: %v, want ErrMaxSize", n, err)
	}
	if err := w.Close("max-size"); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > limit || n < 2 {
		t.Fatalf("%d bytes in %d frames, limit %d", buf.Len(), n, limit)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || r.Damage() != nil || r.Len() != n || r.End().Stopped != "max-size" {
		t.Fatalf("%v %v %d/%d %+v", err, r.Damage(), r.Len(), n, r.End())
	}
}

func TestAt(t *testing.T) {
	file, snaps := record(t, 11, 5, time.Minute)
	r, err := NewReader(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	first := snaps[0].Time
	for _, c := range []struct {
		at   time.Duration
		want int
	}{{0, 0}, {999 * time.Millisecond, 0}, {time.Second, 1}, {4 * time.Second, 4}} {
		if got, err := r.At(first.Add(c.at)); err != nil || got != c.want {
			t.Errorf("At(+%v) = %d, %v; want %d", c.at, got, err, c.want)
		}
	}
	for _, at := range []time.Duration{-time.Nanosecond, 4*time.Second + time.Nanosecond} {
		_, err := r.At(first.Add(at))
		if err == nil || !strings.Contains(err.Error(), "outside the recording, which runs from") {
			t.Errorf("At(+%v): %v", at, err)
		}
	}
}

func TestParseTime(t *testing.T) {
	loc := time.FixedZone("X", 2*3600)
	first := time.Date(2026, 11, 23, 3, 12, 20, 0, loc)
	last := time.Date(2026, 11, 24, 1, 0, 0, 0, loc)
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"03:12", first}, // the minute the recording starts in
		{"03:13", time.Date(2026, 11, 23, 3, 13, 0, 0, loc)},
		{"03:12:30", time.Date(2026, 11, 23, 3, 12, 30, 0, loc)},
		{"00:30", time.Date(2026, 11, 24, 0, 30, 0, 0, loc)}, // after midnight
		{"+90s", first.Add(90 * time.Second)},
		{"-5m", last.Add(-5 * time.Minute)},
		{"2026-11-23T01:13:00Z", time.Date(2026, 11, 23, 3, 13, 0, 0, loc)},
		{"2026-11-23 04:00", time.Date(2026, 11, 23, 4, 0, 0, 0, loc)},
		{"2026-11-23 04:00:05", time.Date(2026, 11, 23, 4, 0, 5, 0, loc)},
		{" 05:00 ", time.Date(2026, 11, 23, 5, 0, 0, 0, loc)},
	} {
		got, err := ParseTime(c.in, first, last, loc)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "soon", "+", "+-5s", "-x", "25:00", "03:12:61"} {
		if _, err := ParseTime(bad, first, last, loc); err == nil {
			t.Errorf("ParseTime(%q): no error", bad)
		}
	}
	// A time of day the recording never saw is put on its first day, where
	// Reader.At names the range.
	if got, _ := ParseTime("02:00", first, last, loc); !got.Equal(time.Date(2026, 11, 23, 2, 0, 0, 0, loc)) {
		t.Errorf("02:00 = %v", got)
	}
}

// FuzzReader feeds the reader any bytes: it must never panic, and what it
// keeps must decode.
func FuzzReader(f *testing.F) {
	file, _ := record(f, 5, 6, 2*time.Second)
	f.Add(file)
	f.Add(file[:len(file)/2])
	f.Add([]byte(magic + "\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		_ = r.Verify()
		for i := range r.Len() {
			if _, err := r.Snapshot(i); err != nil {
				t.Fatalf("frame %d kept after Verify fails: %v", i, err)
			}
		}
		if first, last, ok := r.Range(); ok {
			if _, err := r.At(first.Add(last.Sub(first) / 2)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestReadsVersion1: a recording made before the watch trailer (version
// 1) reads as it did, with no cgroup figures, wait channels or OOM kills.
func TestReadsVersion1(t *testing.T) {
	h := newHost(7, 30)
	snaps := []*proc.Snapshot{h.snapshot()}
	for range 9 {
		snaps = append(snaps, h.step())
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(snaps[0], 5*time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	w.enc.v1 = true
	for _, s := range snaps {
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close("test"); err != nil {
		t.Fatal(err)
	}
	file := buf.Bytes()
	binary.LittleEndian.PutUint32(file[len(magic):], 1)
	r, err := NewReader(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.FormatVersion != 1 || r.Len() != len(snaps) {
		t.Fatalf("version %d, %d frames; want 1, %d", r.Header.FormatVersion, r.Len(), len(snaps))
	}
	for i, want := range snaps {
		got, err := r.Snapshot(i)
		if err != nil {
			t.Fatal(err)
		}
		w := *want
		w.Resources, w.Wchans, w.OOMKills = nil, nil, nil
		sameSnapshot(t, i, got, &w)
	}
}
