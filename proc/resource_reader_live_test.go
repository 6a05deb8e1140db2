package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/proc/proctest"
)

// memoryCgroup makes a cgroup with a memory controller on this host, v2
// where the unified hierarchy has one, else v1, and returns its key and
// directory. It skips when there is none to write.
func memoryCgroup(t *testing.T, m Mounts, name string) (CgroupKey, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a cgroup")
	}
	if ctl, err := os.ReadFile(filepath.Join(m.V2Dir("/"), "cgroup.controllers")); err == nil && strings.Contains(" "+string(ctl), " memory") {
		// The root's subtree_control must pass memory down.
		if err := os.WriteFile(filepath.Join(m.V2Dir("/"), "cgroup.subtree_control"), []byte("+memory"), 0); err == nil {
			return CgroupKey{V2: "/" + name}, m.V2Dir("/" + name)
		}
	}
	if m.V1.Memory != "" {
		return CgroupKey{V1: "/" + name}, cgroupDir(m.V1.Memory, "/", "/"+name)
	}
	t.Skip("no memory controller to make a cgroup in")
	return CgroupKey{}, ""
}

// TestResourceReaderHoldsDescriptors reads a real cgroup's files through
// descriptors held between Reads: a changed limit shows through the same
// descriptor, a file no longer wanted is closed, and a cgroup removed
// and made again under the same name is read afresh.
func TestResourceReaderHoldsDescriptors(t *testing.T) {
	s, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key, dir := memoryCgroup(t, s.Mounts(), fmt.Sprintf("sandtop-rr-%d", os.Getpid()))
	limitFile := "memory.max"
	if key.V2 == "" {
		limitFile = "memory.limit_in_bytes"
	}
	mk := func(limit int) {
		t.Helper()
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(fmt.Sprint(limit)), 0); err != nil {
			t.Fatal(err)
		}
	}
	mk(64 << 20)
	defer os.Remove(dir)

	rr := s.NewResourceReader()
	defer rr.Close()
	base := HeldDescriptors(s)
	read := func(want Figure) *CgroupResources {
		t.Helper()
		snap := &Snapshot{}
		rr.Read(snap, []CgroupWant{{key, want}}, nil)
		return snap.Resources[key]
	}
	if got := read(AllFigures); !got.Has(HaveMemoryLimit) || got.MemoryLimit != 64<<20 {
		t.Fatalf("first read: %+v, want a 64 MiB limit", got)
	}
	all := HeldDescriptors(s) - base
	if all < 3 {
		t.Fatalf("holds %d descriptors after reading every figure, want the cgroup's files held", all)
	}
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(fmt.Sprint(32<<20)), 0); err != nil {
		t.Fatal(err)
	}
	if got := read(AllFigures); got.MemoryLimit != 32<<20 {
		t.Errorf("after the limit changed: %+v, want 32 MiB through the held descriptor", got)
	}
	if n := HeldDescriptors(s) - base; n != all {
		t.Errorf("a second read of the same files holds %d descriptors, want the same %d", n, all)
	}
	if got := read(HaveOOM); got.Has(HaveMemoryLimit) || !got.Has(HaveOOM) {
		t.Errorf("asked for the OOM count only: %+v", got)
	}
	if n := HeldDescriptors(s) - base; n != 1 {
		t.Errorf("asked for the OOM count only, holds %d descriptors, want 1 (the others closed)", n)
	}

	// The same name, a new cgroup: the held descriptor is of the old one.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	mk(16 << 20)
	if got := read(AllFigures); got.MemoryLimit != 16<<20 {
		t.Errorf("after the cgroup was made again: %+v, want its 16 MiB limit", got)
	}
	rr.Close()
	if n := HeldDescriptors(s) - base; n != 0 {
		t.Errorf("after Close, %d descriptors still held", n)
	}
}

// TestResourceReaderReusesOOMOfQuietCgroup: the OOM count of a cgroup
// whose tasks did not run since the scan before is the one read then, so
// it is read one Read in reuseRounds; a cgroup that runs has it read at
// every Read.
func TestResourceReaderReusesOOMOfQuietCgroup(t *testing.T) {
	name := "oom"
	dir := quietCgroup(t, name)
	cg := fmt.Sprintf("/sandtop-reuse-%s-%d", name, os.Getpid())
	sleeper := startSleep(t)
	s := reusingScanner(t, dir, sleeper.Process.Pid)
	key := CgroupKey{V2: cg}
	m := s.Mounts()
	if ctl, err := os.ReadFile(filepath.Join(m.V2Dir("/"), "cgroup.controllers")); err == nil && strings.Contains(" "+string(ctl), " memory") {
		if err := os.WriteFile(filepath.Join(m.V2Dir("/"), "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
			t.Fatal(err)
		}
	} else if m.V1.Memory != "" {
		// A hybrid host counts OOM kills in the v1 memory hierarchy.
		v1 := cgroupDir(m.V1.Memory, "/", cg)
		if err := os.Mkdir(v1, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(v1) })
		key.V1 = cg
	} else {
		proctest.SkipMissing(t, "no memory controller to count OOM kills")
	}
	rr := s.NewResourceReader()
	defer rr.Close()
	reads := func(n int, busy bool) int {
		t.Helper()
		before := rr.reads
		for range n {
			// A task on a CPU is charged at scheduler ticks: refreshes a
			// tick apart see a spinning one run, as a screen's do. On a
			// loaded host the spinner may wait longer for a CPU: a busy
			// round waits until it was charged.
			ran := usageUsec(t, dir)
			time.Sleep(20 * time.Millisecond)
			if busy && !proctest.Eventually(2*time.Second, func() bool { return usageUsec(t, dir) > ran }) {
				t.Fatal("the spinner was not charged in 2s")
			}
			if _, err := s.Scan(); err != nil {
				t.Fatal(err)
			}
			snap := &Snapshot{}
			rr.Read(snap, []CgroupWant{{key, HaveOOM}}, nil)
			if got := snap.Resources[key]; got == nil || !got.Has(HaveOOM) || got.OOMKills != 0 {
				t.Fatalf("OOM count %+v, want 0", got)
			}
		}
		return rr.reads - before
	}
	reads(2, false) // the first read, then one after it to compare with
	if n := reads(2*reuseRounds, false); n > 4 {
		t.Errorf("quiet cgroup: %d reads of its OOM count in %d Reads, want about one in %d", n, 2*reuseRounds, reuseRounds)
	}
	// Now its task runs at every refresh.
	spin := exec.Command("sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = spin.Process.Kill(); _ = spin.Wait() })
	writeFile(t, filepath.Join(dir, "cgroup.procs"), strconv.Itoa(spin.Process.Pid))
	reads(2, true)
	if n := reads(reuseRounds, true); n < reuseRounds {
		t.Errorf("busy cgroup: %d reads of its OOM count in %d Reads, want one each", n, reuseRounds)
	}
}
