package model

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"testing"

	"github.com/sandtop/sandtop/proc"
)

// lazyRules are the rules both sides of TestLazyMatchesFullReads build
// with: the presets (whose exe and cwd matchers are the ones a lazy scan
// must not get wrong) and the test rules.
var lazyRules = append(Effective(nil, true), rules...)

// lazyRead returns p as a lazy scan would report it: exe, cwd and status
// (uid, NSpid) unread, then read, a round at a time, only where need
// (lazyRules.Needs, or its memo NeedsAlike) asks, the way proc's
// staticReader.details does.
func lazyRead(p *proc.Process, need func(*proc.Process) proc.Fields, counts map[proc.Fields]int) *proc.Process {
	full := *p
	q := full
	q.Exe, q.Cwd, q.UID, q.NSpid, q.Unread = "", "", 0, nil, proc.AllFields
	if p.Kernel {
		q.Unread = 0
		return &q
	}
	for q.Unread != 0 {
		want := q.Unread & need(&q)
		if want == 0 {
			break
		}
		counts[want]++
		q.Unread &^= want
		if want&proc.FieldExe != 0 {
			q.Exe = full.Exe
		}
		if want&proc.FieldCwd != 0 {
			q.Cwd = full.Cwd
		}
		if want&proc.FieldStatus != 0 {
			q.UID, q.NSpid = full.UID, full.NSpid
		}
	}
	return &q
}

// details gives every process of the world an exe and a cwd of its own,
// drawn once per identity from values that the preset rules' exe and cwd
// matchers take or refuse, often disagreeing with argv[0] (a process that
// renamed itself, a runtime re-executed through /proc/self/exe).
type details struct {
	rng *rand.Rand
	m   map[proc.Identity][3]string
}

// of returns p's exe, cwd, and whether it lives in a nested pid namespace
// (non-empty).
func (d *details) of(p *proc.Process) [3]string {
	if v, ok := d.m[p.ID()]; ok {
		return v
	}
	id := worldIDs[d.rng.IntN(len(worldIDs))]
	exes := []string{
		"", "/usr/bin/bash", "/usr/bin/firecracker", "/usr/bin/firecracker (deleted)", "/usr/bin/jailer",
		"/var/lib/boxlite/boxes/" + id + "/bin/boxlite-shim", "/usr/bin/bwrap", "/usr/bin/qemu-system-x86_64",
		"/usr/bin/containerd-shim-runc-v2", "/usr/bin/runsc-sandbox", "/usr/bin/containerd-shim-kata-v2",
	}
	cwds := []string{"", "/", "/home/op", "/var/lib/vm0/workspaces/" + id, "/srv/workspaces/" + id + " (deleted)"}
	v := [3]string{exes[d.rng.IntN(len(exes))], cwds[d.rng.IntN(len(cwds))], ""}
	if d.rng.IntN(2) == 0 {
		v[2] = "nested"
	}
	if p.Cwd != "" && d.rng.IntN(2) == 0 {
		v[1] = p.Cwd // keep the world's own cwd (vm0's workspace) half the time
	}
	d.m[p.ID()] = v
	return v
}

// lazyArgvs are command lines that put the preset rules' cheap matchers
// on both sides, for the processes the test adds to the world.
func lazyArgvs(id string) []string {
	return []string{
		"firecracker --id " + id,
		"x --id " + id,
		"/usr/bin/jailer --id " + id + " --exec-file /usr/bin/firecracker",
		"bwrap --bind /var/lib/boxlite/boxes/" + id + " /box -- /box/bin/boxlite-shim",
		"qemu -name sandbox-" + id + ",debug-threads=on",
		"runsc-sandbox boot --bundle /b " + id,
		"containerd-shim-runc-v2 -namespace moby -id " + id + " -address /run/containerd/containerd.sock",
		"renamed-shim -namespace moby -id " + id + " -address /x.sock",
		"/usr/bin/firecracker --config-file /srv/workspaces/" + id + "/config.json",
		"vmm",
	}
}

// TestLazyMatchesFullReads holds a lazy scan to its promise: over random
// hosts, Build gives the same view (sandboxes, IDs, members, captures,
// badges, attribution) whether every process's exe and cwd were read or
// only those Rules.Needs asked for.
func TestLazyMatchesFullReads(t *testing.T) {
	seeds, steps := 6, 100
	if testing.Short() {
		seeds = 4
	}
	counts := map[proc.Fields]int{}
	var procs, sandboxes int
	for seed := range uint64(seeds) {
		w := newWorld(seed)
		d := &details{rng: rand.New(rand.NewPCG(seed, 11)), m: map[proc.Identity][3]string{}}
		for i := range 30 {
			id := worldIDs[w.rng.IntN(len(worldIDs))]
			argvs := lazyArgvs(id)
			pid := 3000 + i
			cg := w.cgroup()
			if w.rng.IntN(3) == 0 {
				cg = "/k8s.io/" + id // containerd's default cgroupsPath
			}
			w.procs[pid] = pr(pid, 1, argvs[w.rng.IntN(len(argvs))], cgroup(cg))
		}
		// One memo for the whole run of a seed, as a scanner keeps it.
		matchInputs := lazyRules.NeedsAlike()
		var fullPrev, lazyPrev *View
		for step := range steps {
			s := w.snapshot()
			full, lazy := *s, *s
			full.Procs, lazy.Procs = nil, nil
			for _, p := range s.Procs {
				f := *p
				v := d.of(p)
				f.Exe, f.Cwd = v[0], v[1]
				f.UID, f.NSpid = 1000+p.PID%3, []int{p.PID}
				if v[2] != "" {
					f.NSpid = append(f.NSpid, 1) // in a nested pid namespace
				}
				l := lazyRead(&f, lazyRules.Needs, counts)
				full.Procs, lazy.Procs = append(full.Procs, &f), append(lazy.Procs, l)
				if a := lazyRead(&f, matchInputs, map[proc.Fields]int{}); !reflect.DeepEqual(a, l) {
					t.Fatalf("seed %d step %d: pid %d read as %+v with NeedsAlike, %+v with Needs", seed, step, f.PID, *a, *l)
				}
			}
			fv, lv := Build(&full, lazyRules, fullPrev), Build(&lazy, lazyRules, lazyPrev)
			if g, want := dumpView(lv), dumpView(fv); g != want {
				t.Fatalf("seed %d step %d:\n--- lazy\n%s--- full\n%s", seed, step, g, want)
			}
			fullPrev, lazyPrev = fv, lv
			procs += len(s.Procs)
			sandboxes += len(fv.Sandboxes)
			w.step()
		}
	}
	reads := func(f proc.Fields) int {
		n := 0
		for k, c := range counts {
			if k&f != 0 {
				n += c
			}
		}
		return n
	}
	exe, cwd, status := reads(proc.FieldExe), reads(proc.FieldCwd), reads(proc.FieldStatus)
	t.Logf("%d processes in %d builds (%d sandboxes): %d exe reads, %d cwd reads, %d status reads", procs, seeds*steps, sandboxes, exe, cwd, status)
	// The check proves something only if the lazy side both read and
	// skipped each field, and the world has sandboxes to get wrong.
	if exe == 0 || cwd == 0 || status == 0 || exe >= procs || cwd >= procs/2 || status >= procs || sandboxes == 0 {
		t.Errorf("exe read for %d, cwd for %d and status for %d of %d processes: the random hosts do not exercise both sides",
			exe, cwd, status, procs)
	}
}

// TestNeeds pins what Rules.Needs asks for, case by case, against the
// preset rules.
func TestNeeds(t *testing.T) {
	presets := Effective(nil, true)
	tests := []struct {
		name   string
		argv   string
		exe    string
		unread proc.Fields
		want   proc.Fields
	}{
		{"argv[0] satisfies vm0's exe matcher: its cwd, and the exe for the exe-only rules", "/usr/bin/firecracker --no-api", "", proc.AllFields, proc.FieldExe | proc.FieldCwd},
		{"exe-only rules need the exe of anything", "bash", "", proc.AllFields, proc.FieldExe},
		{"exe read, no rule's exe matcher takes it", "bash", "/usr/bin/bash", proc.AllFields &^ proc.FieldExe, 0},
		{"exe read and firecracker: now the cwd", "vmm", "/usr/bin/firecracker", proc.AllFields &^ proc.FieldExe, proc.FieldCwd},
		{"nothing unread, nothing needed", "vmm", "/usr/bin/firecracker", 0, 0},
		{"only status unread, no cgroup for a nested-namespace rule", "bash", "/usr/bin/bash", proc.FieldStatus, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pr(10, 1, tc.argv)
			p.Exe, p.Unread = tc.exe, tc.unread
			if got := presets.Needs(p); got != tc.want {
				t.Errorf("Needs(%q, exe %q, unread %b) = %b, want %b", tc.argv, tc.exe, tc.unread, got, tc.want)
			}
		})
	}
	k := pr(11, 2, "")
	k.Kernel, k.Unread = true, proc.AllFields
	if got := presets.Needs(k); got != 0 {
		t.Errorf("a kernel thread needs %b, want nothing", got)
	}
	// A rule without exe or cwd matchers asks for nothing, whatever it is.
	cg := Rules{{Name: "cg", Cgroup: regexp.MustCompile(`/box/(?P<id>\w+)`)}}
	if got := cg.Needs(pr(12, 1, "x", cgroup("/box/a"))); got != 0 {
		t.Errorf("a cgroup rule needs %b, want nothing", got)
	}
}
