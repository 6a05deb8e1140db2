package model

import (
	"cmp"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc"
)

// figuresWorld is the cgroup figures of a world's cgroups, as a
// ResourceReader would read them: the same figures read again are new
// values, a cgroup is now and then left unread.
type figuresWorld struct {
	rng     *rand.Rand
	figures map[proc.CgroupKey]proc.CgroupResources
}

func (f *figuresWorld) random() proc.CgroupResources {
	return proc.CgroupResources{
		Have: proc.Figure(f.rng.Uint32()) & proc.AllFigures, Asked: proc.AllFigures,
		CPUUsec: f.rng.Uint64N(1e7), MemoryBytes: f.rng.Uint64N(1 << 30), MemoryPeak: 1 << 30, MemoryLimit: 2 << 30,
		CPULimitCores: 1.5, PIDs: f.rng.Uint64N(20), PIDsLimit: 100, IORead: f.rng.Uint64N(1 << 20),
		OOMKills: f.rng.Uint64N(3), PressureCPU: float64(f.rng.IntN(100)) / 4,
	}
}

// read fills snap.Resources for the dedicated cgroups of v.
func (f *figuresWorld) read(v *View, snap *proc.Snapshot) {
	wants, _ := ResourceWants(v, ResourceNeeds{})
	snap.Resources = map[proc.CgroupKey]*proc.CgroupResources{}
	for _, w := range wants {
		r, ok := f.figures[w.Key]
		if !ok {
			r = f.random()
			f.figures[w.Key] = r
		}
		if f.rng.IntN(20) == 0 {
			continue // not read this time
		}
		snap.Resources[w.Key] = &r
	}
}

// step changes one figure of one cgroup, the way its tasks running would.
func (f *figuresWorld) step() string {
	keys := slices.SortedFunc(maps.Keys(f.figures), func(a, b proc.CgroupKey) int {
		return cmp.Or(strings.Compare(a.V2, b.V2), strings.Compare(a.V1, b.V1))
	})
	if len(keys) == 0 {
		return "no figures"
	}
	k := keys[f.rng.IntN(len(keys))]
	r := f.figures[k]
	switch f.rng.IntN(6) {
	case 0:
		r.CPUUsec += 1000
	case 1:
		r.MemoryBytes += 4096
	case 2:
		r.OOMKills++
	case 3:
		r.Have ^= proc.Figure(1) << f.rng.IntN(12)
	case 4:
		r.PIDs++
	default:
		r.PressureCPU += 0.25
	}
	f.figures[k] = r
	return "figure of " + k.V2 + k.V1
}

// TestWatchReuseMatchesRecomputation drives a Builder and a Watch through
// the random host changes of TestReuseMatchesFullBuild, with cgroup
// figures that move now and then and refreshes where nothing changed, and
// holds every view the Watch returns equal to the one a Watch that works
// every sandbox's resources out afresh returns: the same resources, the
// same badges and evidence, the same roles remembered.
func TestWatchReuseMatchesRecomputation(t *testing.T) {
	seeds, steps := 8, 300
	if testing.Short() {
		seeds = 3
	}
	var reused, worked int
	for seed := range uint64(seeds) {
		w := newWorld(seed)
		fw := &figuresWorld{rng: rand.New(rand.NewPCG(seed, 11)), figures: map[proc.CgroupKey]proc.CgroupResources{}}
		b := NewBuilder(rules)
		var watch, fresh Watch
		ticks := uint64(100)
		var prev *View
		var log []string
		for range steps {
			s := w.snapshot()
			s.ClockTicks = ticks
			v := b.Build(s, prev)
			fw.read(v, s)
			for i, sb := range v.Sandboxes {
				if len(sb.Members) == 0 {
					continue
				}
				if watch.lastResources(i, sb, s, cgroupFigures(sb, s)) != nil {
					reused++
				} else {
					worked++
				}
			}
			fresh.from = nil // nothing to reuse
			got, want := watch.Apply(v), fresh.Apply(v)
			for i, sb := range got.Sandboxes {
				if g, wnt := got.Resources(sb), want.Resources(want.Sandboxes[i]); !reflect.DeepEqual(g, wnt) {
					t.Fatalf("seed %d after %v: %s: resources\n%s\nwant (worked out afresh)\n%s", seed, log[max(0, len(log)-5):], sb.Key(), mustJSONOf(t, g), mustJSONOf(t, wnt))
				}
				if g, wnt := sb, want.Sandboxes[i]; !slices.Equal(g.Badges, wnt.Badges) || !reflect.DeepEqual(g.Trouble, wnt.Trouble) {
					t.Fatalf("seed %d after %v: %s: badges %v %+v, want %v %+v", seed, log[max(0, len(log)-5):], sb.Key(), g.Badges, g.Trouble, wnt.Badges, wnt.Trouble)
				}
			}
			if !maps.Equal(watch.roles, fresh.roles) {
				t.Fatalf("seed %d after %v: roles remembered %v, want %v", seed, log[max(0, len(log)-5):], watch.roles, fresh.roles)
			}
			prev = got
			// A third of the refreshes change nothing; the others change
			// the host, a cgroup's figures, or both.
			switch fw.rng.IntN(3) {
			case 0:
				log = append(log, "nothing")
			case 1:
				for range 1 + w.rng.IntN(3) {
					log = append(log, w.step())
				}
				fallthrough
			default:
				log = append(log, fw.step())
			}
			if fw.rng.IntN(40) == 0 {
				ticks = 350 - ticks // 100 or 250: no host changes it, but the figures depend on it
				log = append(log, "clock ticks")
			}
		}
	}
	t.Logf("%d sandboxes' resources reused, %d worked out", reused, worked)
	if reused < worked/4 || worked < reused/10 {
		t.Errorf("%d reused, %d worked out: the random host does not exercise both paths", reused, worked)
	}
}

func mustJSONOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWatchReuseSeesChanges holds what reuse must not hide: a figure of
// the cgroup that changed, a cgroup left unread, a member that ran and
// the clock ticks show at the next refresh; a refresh where nothing
// changed hands out the same figures.
func TestWatchReuseSeesChanges(t *testing.T) {
	base := func() (*Builder, *proc.Snapshot, *View) {
		w := newWorld(1)
		b := NewBuilder(rules)
		s := w.snapshot()
		v := b.Build(s, nil)
		s.Resources = map[proc.CgroupKey]*proc.CgroupResources{}
		wants, _ := ResourceWants(v, ResourceNeeds{})
		for _, w := range wants {
			s.Resources[w.Key] = &proc.CgroupResources{Have: proc.HaveCPU | proc.HaveMemory | proc.HaveOOM, CPUUsec: 2e6, MemoryBytes: 1 << 20}
		}
		return b, s, v
	}
	// boxed is the sandbox with a dedicated cgroup the cases look at.
	boxed := func(v *View) (int, *Sandbox) {
		for i, sb := range v.Sandboxes {
			if sb.Cgroup == "/boxlite/aaaa1111bbbb" {
				return i, sb
			}
		}
		t.Fatal("no sandbox in /boxlite/aaaa1111bbbb")
		return 0, nil
	}
	next := func(b *Builder, s *proc.Snapshot, prev *View, edit func(*proc.Snapshot)) *View {
		c := *s
		c.Resources = map[proc.CgroupKey]*proc.CgroupResources{}
		for k, r := range s.Resources {
			r := *r
			c.Resources[k] = &r
		}
		edit(&c)
		return b.Build(&c, prev)
	}
	for _, tc := range []struct {
		name   string
		edit   func(s *proc.Snapshot, sb *Sandbox)
		shared bool // the sandbox is shared with the view before
		check  func(r *Resources) string
	}{
		{"nothing changed", func(*proc.Snapshot, *Sandbox) {}, true, nil},
		{"the cgroup's memory grew", func(s *proc.Snapshot, sb *Sandbox) {
			s.Resources[proc.CgroupKey{V2: sb.Cgroup}].MemoryBytes = 5 << 20
		}, true, func(r *Resources) string {
			if r.Workload.MemoryBytes != 5<<20 {
				return "the workload's memory is not the cgroup's new figure"
			}
			return ""
		}},
		{"an OOM kill counted", func(s *proc.Snapshot, sb *Sandbox) {
			s.Resources[proc.CgroupKey{V2: sb.Cgroup}].OOMKills = 1
		}, true, func(r *Resources) string {
			if r.OOMKills == nil || *r.OOMKills != 1 {
				return "the OOM count is not the cgroup's new figure"
			}
			return ""
		}},
		{"the cgroup was left unread", func(s *proc.Snapshot, sb *Sandbox) {
			delete(s.Resources, proc.CgroupKey{V2: sb.Cgroup})
		}, true, func(r *Resources) string {
			if r.Source != SourceProcesses || r.OOMKills != nil {
				return "figures of a cgroup not read this time"
			}
			return ""
		}},
		{"the clock ticks changed", func(s *proc.Snapshot, sb *Sandbox) { s.ClockTicks = 50 }, true, nil},
		{"a member ran", func(s *proc.Snapshot, sb *Sandbox) {
			s.Procs = slices.Clone(s.Procs)
			m := sb.Members[len(sb.Members)-1].Process
			c := *m
			c.CPUTicks += 1000
			s.Procs[slices.Index(s.Procs, m)] = &c
		}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, s, v := base()
			var w Watch
			before := w.Apply(v)
			i, sb := boxed(v)
			v2 := next(b, s, v, func(s *proc.Snapshot) { tc.edit(s, sb) })
			if (v2.Sandboxes[i] == sb) != tc.shared {
				t.Fatalf("sandbox shared with the view before: %v, want %v", v2.Sandboxes[i] == sb, tc.shared)
			}
			after := w.Apply(v2)
			got := after.Resources(after.Sandboxes[i])
			sb2 := v2.Sandboxes[i]
			want := resourcesOf(sb2, v2.Snapshot, cgroupFigures(sb2, v2.Snapshot), w.role)
			if !reflect.DeepEqual(*got, want) {
				t.Fatalf("resources\n%s\nwant (worked out afresh)\n%s", mustJSONOf(t, got), mustJSONOf(t, want))
			}
			if tc.check != nil {
				if msg := tc.check(got); msg != "" {
					t.Errorf("%s: %s", msg, mustJSONOf(t, got))
				}
			}
			// Only a refresh where nothing the figures come from changed
			// hands out the very figures of the view before.
			old := before.Resources(before.Sandboxes[i])
			if same := got.OOMKills != nil && got.OOMKills == old.OOMKills; same != (tc.name == "nothing changed") {
				t.Errorf("the figures of the view before handed out again: %v", same)
			}
		})
	}
}
