package proc

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

// Fuzz targets for every /proc and cgroupfs parser: /proc content is
// hostile input. A root given with --proc-root can hold anything, and a process
// chooses its own comm and argv, so each parser must hold its invariants on
// any input, not only not panic. `make torture` runs each for a bounded
// time; inputs that once broke a parser live in testdata/fuzz/<Name>/ and
// run with every `go test`.

// FuzzParseStat: comm is exactly the bytes between the first '(' and the
// last ')', whatever they hold, and a line that parses round-trips its
// fields.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (sleep) S 7 42 7 0 -1 4194304 1 0 0 0 3 4 0 0 20 0 1 0 12345 1 2 3 4 5 6\n"), "x")
	f.Add([]byte("9 (a) b (c)) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 3 0 777 0 0 0"), ") S 1 (")
	f.Add([]byte("1 () R 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"), "\n\x00")
	f.Fuzz(func(t *testing.T, b []byte, comm string) {
		var st procfs.ProcStat
		if err := parseStat(b, &st); err == nil {
			open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
			if st.Comm != string(b[open+1:end]) {
				t.Errorf("comm %q, want %q", st.Comm, b[open+1:end])
			}
			if st.PID < 0 || st.PPID < 0 || st.NumThreads < 0 || len(st.State) != 1 {
				t.Errorf("parsed %+v from %q", st, b)
			}
		}
		// Any comm, including one that looks like the fields after it,
		// must come back as it went in, with the numbers intact.
		if strings.ContainsRune(comm, '\x00') {
			return // the kernel never prints a NUL in comm
		}
		line := fmt.Sprintf("4242 (%s) S 1 4242 4242 0 -1 4194560 0 0 0 0 5 6 0 0 20 0 1 0 987654 1 2 3 4 5 6\n", comm)
		var got procfs.ProcStat
		if err := parseStat([]byte(line), &got); err != nil {
			t.Fatalf("parseStat(%q): %v", line, err)
		}
		want := procfs.ProcStat{PID: 4242, Comm: comm, State: "S", PPID: 1, PGRP: 4242, Session: 4242,
			Flags: 4194560, UTime: 5, STime: 6, NumThreads: 1, Starttime: 987654, RSS: 2, StartCode: 4}
		if got.PID != want.PID || got.Comm != want.Comm || got.State != want.State || got.PPID != want.PPID ||
			got.PGRP != want.PGRP || got.Session != want.Session || got.Flags != want.Flags || got.UTime != want.UTime ||
			got.STime != want.STime || got.NumThreads != want.NumThreads || got.Starttime != want.Starttime ||
			got.RSS != want.RSS || got.StartCode != want.StartCode {
			t.Errorf("parseStat(%q) = %+v", line, got)
		}
	})
}

// FuzzParseCmdline: the arguments joined by NUL give back the file minus
// its trailing NULs, and an empty file is no argv.
func FuzzParseCmdline(f *testing.F) {
	f.Add([]byte("/bin/sleep\x00600\x00"))
	f.Add([]byte("a\x00\x00b\x00\x00\x00"))
	f.Add([]byte("\x00"))
	f.Add([]byte("bash --norc with spaces no NULs"))
	f.Fuzz(func(t *testing.T, b []byte) {
		argv := parseCmdline(b)
		if len(b) == 0 {
			if argv != nil {
				t.Fatalf("empty cmdline gave %q", argv)
			}
			return
		}
		if got, want := strings.Join(argv, "\x00"), string(bytes.TrimRight(b, "\x00")); got != want {
			t.Errorf("parseCmdline(%q) = %q: joins to %q", b, argv, got)
		}
	})
}

// FuzzParseStatusIDs: a uid is -1 (unknown) or a real uid_t, and NSpid
// holds pids: what the kernel can print.
func FuzzParseStatusIDs(f *testing.F) {
	f.Add([]byte("Name:\tsleep\nUid:\t0\t0\t0\t0\nNSpid:\t42\t1\n"))
	f.Add([]byte("Uid:\t1000\t1000\t1000\t1000\n"))
	f.Add([]byte("Uid:\nNSpid:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		uid, nspid, err := ParseStatusIDs(b)
		if err != nil {
			return
		}
		if uid < -1 || uid > math.MaxUint32 {
			t.Errorf("uid %d from %q", uid, b)
		}
		for _, pid := range nspid {
			if pid <= 0 {
				t.Errorf("NSpid %v from %q", nspid, b)
			}
		}
	})
}

// FuzzParseCgroupPaths: the paths come from the matching lines verbatim,
// and a hierarchy that is not mounted yields none.
func FuzzParseCgroupPaths(f *testing.F) {
	f.Add([]byte("12:freezer:/sandbox/1\n0::/system.slice/containerd.service\n"), "/a:b/c")
	f.Add([]byte("0::/\n"), "")
	f.Add([]byte("3:cpu,freezer,pids:/x:y\n"), "/with\nnewline")
	f.Fuzz(func(t *testing.T, b []byte, path string) {
		both := Mounts{Unified: "/sys/fs/cgroup/unified", Freezer: "/sys/fs/cgroup/freezer"}
		v2, fr, err := parseCgroupPaths(b, both)
		if err == nil {
			if v2 != "" && !bytes.Contains(b, []byte("0::"+v2)) {
				t.Errorf("v2 path %q is on no 0:: line of %q", v2, b)
			}
			if fr != "" && !bytes.Contains(b, []byte(":"+fr)) {
				t.Errorf("freezer path %q not in %q", fr, b)
			}
			if v2n, frn, _ := parseCgroupPaths(b, Mounts{}); v2n != "" || frn != "" {
				t.Errorf("no hierarchy mounted, yet paths %q %q", v2n, frn)
			}
		}
		if strings.Contains(path, "\n") {
			return // one line per hierarchy: a path cannot hold a newline here
		}
		file := "12:freezer:" + path + "\n11:pids:/other\n0::" + path + "\n"
		v2, fr, err = parseCgroupPaths([]byte(file), both)
		if err != nil || v2 != path || fr != path {
			t.Errorf("parseCgroupPaths(%q) = %q, %q, %v; want %q twice", file, v2, fr, err, path)
		}
	})
}

// FuzzParseCgroupEvents: whatever the file holds, the state exists, and a
// state written back as cgroup.events parses to itself.
func FuzzParseCgroupEvents(f *testing.F) {
	f.Add([]byte("populated 1\nfrozen 0\n"))
	f.Add([]byte("populated 0\nfrozen 1\n"))
	f.Add([]byte("frozen  1 \n\npopulated\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st := parseCgroupEvents(b)
		if !st.Exists {
			t.Fatalf("parseCgroupEvents(%q): Exists false", b)
		}
		if st.Frozen && !bytes.Contains(b, []byte("frozen")) || st.Populated && !bytes.Contains(b, []byte("populated")) {
			t.Errorf("parseCgroupEvents(%q) = %+v: a flag set by no line", b, st)
		}
		text := fmt.Sprintf("populated %d\nfrozen %d\n", b2i(st.Populated), b2i(st.Frozen))
		if again := parseCgroupEvents([]byte(text)); again != st {
			t.Errorf("round trip of %+v through %q gave %+v", st, text, again)
		}
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzParseFreezerState: frozen exactly for FROZEN and FREEZING.
func FuzzParseFreezerState(f *testing.F) {
	for _, s := range []string{"THAWED\n", "FROZEN\n", "FREEZING", " FROZEN \n\n", "frozen"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st := parseFreezerState(b)
		s := string(bytes.TrimSpace(b))
		if want := s == "FROZEN" || s == "FREEZING"; st.Frozen != want || !st.Exists || !st.Populated {
			t.Errorf("parseFreezerState(%q) = %+v", b, st)
		}
	})
}

// FuzzParseCgroupProcs: only positive pids, sorted, no duplicates, each
// one a line of the file; and a list written out parses back to itself.
func FuzzParseCgroupProcs(f *testing.F) {
	f.Add([]byte("1\n42\n42\n7\n"))
	f.Add([]byte(""))
	f.Add([]byte("0\n"))
	f.Add([]byte("-5\n"))
	f.Add([]byte(" 12 \n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pids, err := appendCgroupProcs(nil, b)
		if err != nil {
			return
		}
		checkPIDList(t, b, pids, true)
		var out strings.Builder
		for _, p := range slices.Backward(pids) {
			fmt.Fprintf(&out, "%d\n", p)
		}
		if again, err := appendCgroupProcs(nil, []byte(out.String())); err != nil || !slices.Equal(again, pids) {
			t.Errorf("round trip of %v: %v, %v", pids, again, err)
		}
	})
}

// FuzzParseChildren: only positive pids, one per field.
func FuzzParseChildren(f *testing.F) {
	f.Add([]byte("12 13 14 "))
	f.Add([]byte(""))
	f.Add([]byte("0"))
	f.Add([]byte("+7 08"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pids, err := parseChildren(b)
		if err != nil {
			return
		}
		if len(pids) != len(bytes.Fields(b)) {
			t.Errorf("parseChildren(%q) = %v: not one pid per field", b, pids)
		}
		checkPIDList(t, b, pids, false)
	})
}

// checkPIDList checks that every pid is positive (kill(2) reads 0 and
// negative numbers as process groups and "everything"), and that a sorted
// list is strictly increasing.
func checkPIDList(t *testing.T, in []byte, pids []int, sorted bool) {
	t.Helper()
	for i, p := range pids {
		if p <= 0 {
			t.Errorf("pid %d from %q", p, in)
		}
		if sorted && i > 0 && pids[i-1] >= p {
			t.Errorf("pids %v from %q are not sorted and unique", pids, in)
		}
	}
}

// FuzzFindMounts: any mountinfo either fails or names only mount points it
// holds; and a cgroup2 mount point with any bytes the kernel escapes
// (space, tab, newline, backslash as \ooo) comes back as it went in.
func FuzzFindMounts(f *testing.F) {
	f.Add([]byte("30 22 0:26 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"+
		"31 22 0:27 / /sys/fs/cgroup/freezer rw shared:10 - cgroup cgroup rw,freezer\n"), "/sys/fs/cgroup")
	f.Add([]byte("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"), "/a b\\c")
	f.Add([]byte("1 2 3 4 5 6 -\n"), "/\t\n")
	f.Fuzz(func(t *testing.T, b []byte, dir string) {
		m, err := FindMounts(b)
		if err == nil && (m.Unified != "" && !bytes.Contains(b, []byte("cgroup2")) ||
			m.Freezer != "" && !bytes.Contains(b, []byte("freezer"))) {
			t.Errorf("FindMounts(%q) = %+v: a mount from nowhere", b, m)
		}
		if dir == "" {
			return
		}
		esc := strings.NewReplacer(`\`, `\134`, " ", `\040`, "\t", `\011`, "\n", `\012`).Replace(dir)
		line := "30 22 0:26 " + esc + " " + esc + " rw,nosuid shared:9 - cgroup2 cgroup2 rw\n"
		m, err = FindMounts([]byte(line))
		if err != nil || m.Unified != dir || m.UnifiedRoot != dir {
			t.Errorf("FindMounts(%q) = %+v, %v; want %q", line, m, err, dir)
		}
	})
}

// FuzzParseUnixListeners: every listener is the tail of some line; and a
// listening socket at any path without a newline is found as it is.
func FuzzParseUnixListeners(f *testing.F) {
	const header = "Num       RefCount Protocol Flags    Type St Inode Path\n"
	f.Add([]byte(header+"0000000000000000: 00000002 00000000 00010000 0001 01 20393 /run/x.sock\n"), " /lead space")
	f.Add([]byte(header+"0000000000000000: 00000003 00000000 00000000 0001 03 20394\n"), "@abstract@")
	f.Add([]byte("Num RefCount Protocol Flags Type St Path\n0: 1 0 10000 1 1 /old\n"), "")
	f.Fuzz(func(t *testing.T, b []byte, path string) {
		ls, err := parseUnixListeners(b)
		if err == nil {
			for l := range ls {
				if l == "" || !bytes.Contains(b, []byte(l)) {
					t.Errorf("listener %q is not in %q", l, b)
				}
			}
		}
		if path == "" || strings.Contains(path, "\n") {
			return
		}
		text := header + "0000000000000000: 00000002 00000000 00010000 0001 01 20393 " + path + "\n" +
			"0000000000000000: 00000002 00000000 00000000 0001 01 20395 /not/listening\n"
		ls, err = parseUnixListeners([]byte(text))
		if err != nil || !ls[path] || len(ls) != 1 {
			t.Errorf("parseUnixListeners(%q) = %v, %v; want {%q}", text, ls, err, path)
		}
	})
}
