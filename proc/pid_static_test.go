package proc

import (
	"os"
	"slices"
	"testing"
)

func TestParseCmdline(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{name: "empty (kernel thread, emptied argv)", in: "", want: nil},
		{name: "ordinary", in: "/bin/sleep\x00600\x00", want: []string{"/bin/sleep", "600"}},
		{name: "empty argument inside", in: "a\x00\x00b\x00", want: []string{"a", "", "b"}},
		{name: "trailing empties dropped", in: "a\x00\x00\x00", want: []string{"a"}},
		{name: "rewritten without NULs", in: "bash --norc", want: []string{"bash --norc"}},
		{name: "only NULs", in: "\x00\x00", want: []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseCmdline([]byte(tt.in))
			if !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("parseCmdline(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseStatusIDs(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		uid   int
		nspid []int
		bad   bool
	}{
		{name: "nested pid namespace", in: "Name:\tsleep\nUid:\t1000\t0\t0\t0\nNSpid:\t4242\t1\n", uid: 1000, nspid: []int{4242, 1}},
		{name: "no NSpid (before Linux 4.1)", in: "Uid:\t0\t0\t0\t0\n", uid: 0},
		{name: "no Uid", in: "Name:\tx\n", uid: -1},
		{name: "empty Uid", in: "Uid:\n", bad: true},
		{name: "bad Uid", in: "Uid:\tx\t0\t0\t0\n", bad: true},
		{name: "bad NSpid", in: "Uid:\t0\nNSpid:\t1\tz\n", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uid, nspid, err := ParseStatusIDs([]byte(tt.in))
			if tt.bad {
				if err == nil || uid != -1 {
					t.Errorf("ParseStatusIDs(%q) = %d, %v, %v; want uid -1 and an error", tt.in, uid, nspid, err)
				}
				return
			}
			if err != nil || uid != tt.uid || !slices.Equal(nspid, tt.nspid) {
				t.Errorf("ParseStatusIDs(%q) = %d, %v, %v; want %d, %v", tt.in, uid, nspid, err, tt.uid, tt.nspid)
			}
		})
	}
}

func TestParseCgroupPaths(t *testing.T) {
	both := Mounts{Unified: "/sys/fs/cgroup/unified", Freezer: "/sys/fs/cgroup/freezer"}
	tests := []struct {
		name        string
		in          string
		m           Mounts
		v2, freezer string
		bad         bool
	}{
		{name: "hybrid host", in: "12:pids:/x\n7:cpu,freezer:/box:1\n0::/sys.slice/a:b.scope\n", m: both, v2: "/sys.slice/a:b.scope", freezer: "/box:1"},
		{name: "v1 only: 0::/ means nothing", in: "7:freezer:/paused\n0::/\n", m: Mounts{Freezer: both.Freezer}, freezer: "/paused"},
		{name: "named v1 hierarchy is not v2", in: "1:name=systemd:/init.scope\n", m: both},
		{name: "controller named like freezer", in: "3:freezerish:/x\n", m: both},
		{name: "two fields", in: "0:/x\n", m: both, bad: true},
		{name: "bad hierarchy ID", in: "x::/x\n", m: both, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v2, freezer, err := parseCgroupPaths([]byte(tt.in), tt.m)
			if (err != nil) != tt.bad || v2 != tt.v2 || freezer != tt.freezer {
				t.Errorf("parseCgroupPaths(%q) = %q, %q, %v; want %q, %q (error %v)", tt.in, v2, freezer, err, tt.v2, tt.freezer, tt.bad)
			}
		})
	}
}

// TestStaticReadAllocations counts what reading one process's static
// fields allocates, on the test's own process, once its cgroup path has
// been seen: argv (its string and its slice), exe, cwd and NSpid, all of
// them kept. Paths, status fields and a cgroup path already seen must cost
// nothing: a cold scan reads them for every process.
func TestStaticReadAllocations(t *testing.T) {
	raw, err := readStatOnce("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := readMounts("/proc")
	if err != nil {
		t.Fatal(err)
	}
	st := compactStat(&raw)
	r := newStaticReader()
	sf, gone := r.read("/proc", &st, false, mounts, nil)
	if gone || sf.partial || sf.exe == "" || sf.argv == nil || sf.nspid == nil {
		t.Fatalf("read of the test's own process: %+v, gone %v", sf, gone)
	}
	const kept = 5
	if n := testing.AllocsPerRun(50, func() { r.read("/proc", &st, false, mounts, nil) }); n > kept {
		t.Errorf("reading one process allocated %v times, want at most %d", n, kept)
	}
}

// parseCgroupPaths is cgroupPathBytes with the paths as strings.
func parseCgroupPaths(b []byte, m Mounts) (v2, freezer string, err error) {
	v2b, freezerb, err := cgroupPathBytes(b, m)
	return string(v2b), string(freezerb), err
}
