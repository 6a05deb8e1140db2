package proc

import (
	"github.com/sandtop/sandtop/proc/proctest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// TestScanLazy checks a lazy scan (Options.Need) against a full one on the
// fixture host: it reads exe, cwd and status only where Need asks, asks
// again after each read, marks what it left in Unread, and otherwise
// reports every process exactly as the full scan does. Seeding a full
// scanner from the lazy snapshot reads what was left, once.
func TestScanLazy(t *testing.T) {
	full := scan(t, newFixtureScanner(t, hostRoot))

	var mu sync.Mutex
	asked := map[int][]Fields{}
	// Need as a rule "exe firecracker with a cwd matcher" would have it:
	// the exe of anything whose argv[0] does not say firecracker, then
	// the cwd of what turns out to be firecracker.
	need := func(p *Process) Fields {
		mu.Lock()
		asked[p.PID] = append(asked[p.PID], p.Unread)
		mu.Unlock()
		switch {
		case strings.Contains(strings.Join(p.Argv, " "), "--id") && p.Unread&FieldExe != 0:
			return FieldExe
		case p.Exe == "/usr/bin/firecracker":
			return FieldCwd
		}
		return 0
	}
	root := proctest.Fixture(t, hostRoot)
	s, err := NewScanner(Options{ProcRoot: filepath.Join(root, "proc"), SysRoot: root, Need: need})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	lazy := scan(t, s)
	// pids 300 and 301 have "--id": two exe reads, then one cwd read for
	// the firecracker; no status anywhere.
	if s.reads.exe != 2 || s.reads.cwd != 1 || s.reads.status != 0 || s.reads.cmdline != 7 || s.reads.cgroup != 8 {
		t.Errorf("lazy cold scan reads = %+v, want exe 2, cwd 1, status 0, cmdline 7, cgroup 8", s.reads)
	}
	if got := asked[301]; !reflect.DeepEqual(got, []Fields{AllFields, FieldCwd | FieldStatus, FieldStatus}) {
		t.Errorf("Need saw pid 301 with unread %v, want all, then cwd+status, then status", got)
	}
	if len(lazy.Procs) != len(full.Procs) {
		t.Fatalf("lazy scan has %d processes, full %d", len(lazy.Procs), len(full.Procs))
	}
	for _, f := range full.Procs {
		l := *lazy.Proc(f.PID)
		want := *f
		switch {
		case f.Kernel:
		case f.PID == 301:
			want.UID, want.NSpid, want.Unread = 0, nil, FieldStatus
		case f.PID == 300:
			want.Cwd, want.UID, want.NSpid, want.Unread = "", 0, nil, FieldCwd|FieldStatus
		default:
			want.Exe, want.Cwd, want.UID, want.NSpid, want.Unread = "", "", 0, nil, AllFields
			if f.PID == 400 {
				want.Partial = true // its cmdline and cgroup are missing too
			}
		}
		if !reflect.DeepEqual(l, want) {
			t.Errorf("pid %d lazy:\n got  %+v\n want %+v", f.PID, l, want)
		}
	}

	t.Run("a refresh asks Need nothing", func(t *testing.T) {
		clear(asked)
		scan(t, s)
		if len(asked) != 0 || !statOnly(s.reads) {
			t.Errorf("refresh asked Need about %d processes and read %+v, want nothing but stat", len(asked), s.reads)
		}
	})

	t.Run("a full scanner seeded from it reads what is left", func(t *testing.T) {
		fs := newFixtureScanner(t, hostRoot)
		fs.Seed(lazy)
		got := scan(t, fs)
		// Seeding cannot tell pid 400's missing cmdline from a blank
		// argv, so it is tried once.
		if fs.reads.cmdline != blankArgvs+1 || fs.reads.cgroup != 0 || fs.reads.status != 8 || fs.reads.exe != 5 || fs.reads.cwd != 6 {
			t.Errorf("seeded full scan reads = %+v, want only the unread: status 8, exe 5, cwd 6", fs.reads)
		}
		for _, f := range full.Procs {
			if g := got.Proc(f.PID); !reflect.DeepEqual(*g, *f) {
				t.Errorf("pid %d after the seeded scan:\n got  %+v\n want %+v", f.PID, *g, *f)
			}
		}
		scan(t, fs)
		if !statOnly(fs.reads) {
			t.Errorf("second seeded scan reads %+v, want stat only", fs.reads)
		}
	})
}
