package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseCgroupResourceFiles(t *testing.T) {
	if v, limited, ok := parseMax([]byte("max\n")); !ok || limited || v != 0 {
		t.Errorf("parseMax(max) = %d %v %v", v, limited, ok)
	}
	if v, limited, ok := parseMax([]byte("67108864\n")); !ok || !limited || v != 64<<20 {
		t.Errorf("parseMax(64M) = %d %v %v", v, limited, ok)
	}
	if c, limited, ok := parseCPUMax([]byte("50000 100000\n")); !ok || !limited || c != 0.5 {
		t.Errorf("parseCPUMax = %v %v %v", c, limited, ok)
	}
	if _, limited, ok := parseCPUMax([]byte("max 100000\n")); !ok || limited {
		t.Errorf("parseCPUMax(max) limited=%v ok=%v", limited, ok)
	}
	r, w := parseIOStat([]byte("8:0 rbytes=4096 wbytes=100 rios=1 wios=1 dbytes=0 dios=0\n8:16 rbytes=1 wbytes=2 rios=1 wios=1\n"))
	if r != 4097 || w != 102 {
		t.Errorf("parseIOStat = %d %d", r, w)
	}
	r, w = parseBlkioBytes([]byte("8:0 Read 10\n8:0 Write 20\n8:0 Sync 30\n8:0 Total 30\n8:16 Read 1\nTotal 31\n"))
	if r != 11 || w != 20 {
		t.Errorf("parseBlkioBytes = %d %d", r, w)
	}
	if p, ok := parsePressureSome([]byte("some avg10=12.50 avg60=1.00 avg300=0.00 total=9\nfull avg10=99.00 avg60=0 avg300=0 total=0\n")); !ok || p != 12.5 {
		t.Errorf("parsePressureSome = %v %v", p, ok)
	}
	if _, ok := parsePressureSome([]byte("some avg10=nan\n")); ok {
		t.Error("parsePressureSome accepted nan")
	}
	if v, ok := flatKey([]byte("low 0\nhigh 0\nmax 3\noom 2\noom_kill 1\noom_group_kill 0\n"), "oom_kill"); !ok || v != 1 {
		t.Errorf("flatKey(oom_kill) = %d %v", v, ok)
	}
}

// TestResourceReaderFixture reads a v2 cgroup with every file and a v1
// memory cgroup for a hybrid host's memory, from plain files.
func TestResourceReaderFixture(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{
		"cpu.stat":        "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n",
		"memory.current":  "1048576\n",
		"memory.peak":     "2097152\n",
		"memory.max":      "max\n",
		"memory.events":   "low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\n",
		"cpu.max":         "150000 100000\n",
		"pids.current":    "7\n",
		"pids.max":        "100\n",
		"io.stat":         "8:0 rbytes=10 wbytes=20 rios=1 wios=1\n",
		"cpu.pressure":    "some avg10=1.00 avg60=0 avg300=0 total=1\n",
		"memory.pressure": "some avg10=2.00 avg60=0 avg300=0 total=1\nfull avg10=0 avg60=0 avg300=0 total=0\n",
	} {
		write("unified/box/"+name, text)
	}
	write("memory/v1box/memory.usage_in_bytes", "4096\n")
	write("memory/v1box/memory.max_usage_in_bytes", "8192\n")
	write("memory/v1box/memory.limit_in_bytes", "9223372036854771712\n")
	write("memory/v1box/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
	write("pids/v1box/pids.current", "2\n")
	write("pids/v1box/pids.max", "max\n")
	write("cpu/v1box/cpu.cfs_quota_us", "50000\n")
	write("cpu/v1box/cpu.cfs_period_us", "100000\n")

	m := Mounts{Unified: filepath.Join(root, "unified"), UnifiedRoot: "/", V1: V1Mounts{Memory: filepath.Join(root, "memory"), PIDs: filepath.Join(root, "pids"), CPU: filepath.Join(root, "cpu")}}
	rr := NewResourceReader(t.TempDir(), m)
	defer rr.Close()
	snap := &Snapshot{Time: time.Now()}
	v2, v1 := CgroupKey{V2: "/box"}, CgroupKey{V1: "/v1box"}
	rr.Read(snap, []CgroupWant{{v2, AllFigures}, {v1, AllFigures}}, nil)

	got := snap.Resources[v2]
	want := CgroupResources{
		Asked:   AllFigures,
		Have:    HaveCPU | HaveMemory | HaveMemoryPeak | HaveOOM | HaveCPULimit | HavePIDs | HavePIDsLimit | HaveIO | HavePressureCPU | HavePressureMemory,
		CPUUsec: 2500000, MemoryBytes: 1 << 20, MemoryPeak: 2 << 20, OOMKills: 2, CPULimitCores: 1.5,
		PIDs: 7, PIDsLimit: 100, IORead: 10, IOWrite: 20, PressureCPU: 1, PressureMemory: 2,
	}
	if got == nil || *got != want {
		t.Errorf("v2 = %+v\nwant %+v", got, want)
	}
	got = snap.Resources[v1]
	want = CgroupResources{Asked: AllFigures, Have: HaveMemory | HaveMemoryPeak | HaveOOM | HavePIDs | HaveCPULimit, MemoryBytes: 4096, MemoryPeak: 8192, OOMKills: 3, PIDs: 2, CPULimitCores: 0.5}
	if got == nil || *got != want {
		t.Errorf("v1 = %+v\nwant %+v", got, want)
	}

	// Only what is asked for is read: memory alone, from v2 where it is
	// and from v1 where v2 has none.
	rr.Read(snap, []CgroupWant{{v2, HaveMemory}, {v1, HaveMemory | HaveOOM}}, nil)
	if got := snap.Resources[v2]; got == nil || *got != (CgroupResources{Asked: HaveMemory, Have: HaveMemory, MemoryBytes: 1 << 20}) {
		t.Errorf("v2, memory only = %+v", got)
	}
	if got := snap.Resources[v1]; got == nil || *got != (CgroupResources{Asked: HaveMemory | HaveOOM, Have: HaveMemory | HaveOOM, MemoryBytes: 4096, OOMKills: 3}) {
		t.Errorf("v1, memory and oom only = %+v", got)
	}
}

func TestParseKmsgOOM(t *testing.T) {
	boot := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name string
		rec  string
		want OOMKill
		ok   bool
	}{
		{
			name: "memcg limit",
			rec:  "6,1234,5000000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/box,task_memcg=/box/sub,task=stress,pid=4242,uid=0\n",
			want: OOMKill{Time: boot.Add(5 * time.Second), PID: 4242, Comm: "stress", Constraint: "CONSTRAINT_MEMCG", OOMMemcg: "/box", TaskMemcg: "/box/sub"},
			ok:   true,
		},
		{
			name: "host-wide, hostile comm",
			rec:  "6,9,1,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/fc,task=a,task=b,pid=1,pid=77,uid=0\n",
			want: OOMKill{Time: boot.Add(time.Microsecond), PID: 77, Comm: "a,task=b,pid=1", Constraint: "CONSTRAINT_NONE", TaskMemcg: "/fc"},
			ok:   true,
		},
		{name: "another line", rec: "6,10,1,-;Memory cgroup out of memory: Killed process 4242 (stress)\n"},
		{name: "no header", rec: "oom-kill:constraint=CONSTRAINT_NONE,task=x,pid=1,uid=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseKmsgOOM([]byte(tc.rec), boot)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Errorf("parseKmsgOOM = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestKmsgReadAhead reads the log ahead, as a one-shot command does
// while it scans, and then on: each kill is kept once, whichever read
// found it. A file stands in for /dev/kmsg, whose reads return a record
// each: a file of one record reads the same.
func TestKmsgReadAhead(t *testing.T) {
	boot := time.Unix(1_700_000_000, 0)
	path := filepath.Join(t.TempDir(), "kmsg")
	rec := func(sec, pid int) string {
		return fmt.Sprintf("6,1,%d,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/box,task_memcg=/box,task=stress,pid=%d,uid=0\n", sec*1_000_000, pid)
	}
	if err := os.WriteFile(path, []byte(rec(5, 4242)), 0o600); err != nil {
		t.Fatal(err)
	}
	k := newKmsgReader(path)
	defer k.close()
	k.readAhead(boot)
	if got := k.kills(boot, boot); len(got) != 1 || got[0].PID != 4242 {
		t.Fatalf("after the read ahead: %+v, want the kill of 4242", got)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(rec(9, 4343)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got := k.kills(boot, boot.Add(6*time.Second))
	if len(got) != 1 || got[0].PID != 4343 {
		t.Fatalf("the next read: %+v, want the kill of 4343 alone (4242's is before since)", got)
	}
}
