package model

import (
	"reflect"
	"testing"
)

// TestRecordSkipMatchesRecordingAll drives a Builder and a Watch through
// the random host changes of TestReuseMatchesFullBuild (captures that vary
// among them) and records every judged view twice: once as the live
// screen does, skipping the sandboxes the last view held at the same
// position, and once recording every sandbox. What the two remember, and
// the globs they give, must be the same.
func TestRecordSkipMatchesRecordingAll(t *testing.T) {
	seeds, steps := 8, 300
	if testing.Short() {
		seeds = 3
	}
	var shared int
	for seed := range uint64(seeds) {
		w := newWorld(seed)
		b := NewBuilder(rules)
		var watch Watch
		lo, all := NewLeftovers(rules), NewLeftovers(rules)
		var prev, last *View
		var log []string
		for range steps {
			v := watch.Apply(b.Build(w.snapshot(), prev))
			if last != nil {
				for i, sb := range v.Sandboxes {
					if i < len(last.Sandboxes) && last.Sandboxes[i] == sb {
						shared++
					}
				}
			}
			all.lastRecorded = nil // nothing to skip
			got, want := lo.Globs(v), all.Globs(v)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d after %v: globs\n%+v\nwant\n%+v", seed, log[max(0, len(log)-5):], got, want)
			}
			for _, c := range []struct {
				name      string
				got, want any
			}{
				{"captures", lo.recorded, all.recorded},
				{"sockets", lo.sockets, all.sockets},
				{"alive", lo.alive, all.alive},
				{"namespaces", lo.namespaces, all.namespaces},
			} {
				if !reflect.DeepEqual(c.got, c.want) {
					t.Fatalf("seed %d after %v: %s remembered\n%v\nwant\n%v", seed, log[max(0, len(log)-5):], c.name, c.got, c.want)
				}
			}
			prev, last = v, v
			for range 1 + w.rng.IntN(3) {
				log = append(log, w.step())
			}
		}
	}
	if shared == 0 {
		t.Error("no sandbox was ever shared with the view before: nothing was skipped")
	}
}

// TestRecordSeesNewSandboxes holds what the skip must not hide: a new
// sandbox at the position of one recorded before is recorded (its
// captures give globs), and the namespace of a runtime and ID stays the
// one of the last sandbox with them in the view, recorded before or not.
func TestRecordSeesNewSandboxes(t *testing.T) {
	live := func(sb Sandbox) *Sandbox {
		sb.rules = []*Rule{sb.Rule}
		sb.Members = []*Member{{Process: pr(10, 1, "halfexp "+sb.ID)}}
		return &sb
	}
	t.Run("new captures at a known position", func(t *testing.T) {
		f := NewLeftovers(Rules{halfRule})
		a := live(Sandbox{ID: "a", Runtime: "half", Rule: halfRule, Vars: map[string]string{"id": "a", "base": "/srv/0"}})
		f.Record(&View{Sandboxes: []*Sandbox{a}})
		a2 := live(Sandbox{ID: "a", Runtime: "half", Rule: halfRule, Vars: map[string]string{"id": "a", "base": "/srv/1"}})
		var pats []string
		for _, g := range f.Globs(&View{Sandboxes: []*Sandbox{a2}}) {
			pats = append(pats, g.Pattern)
		}
		if want := []string{"/srv/0/x/*", "/srv/1/x/*", "/run/half/*"}; !reflect.DeepEqual(pats, want) {
			t.Errorf("globs %q, want %q", pats, want)
		}
	})
	t.Run("the last namespace stands", func(t *testing.T) {
		f := NewLeftovers(Rules{halfRule})
		x := live(Sandbox{ID: "a", Namespace: "x", Runtime: "half", Rule: halfRule, Vars: map[string]string{"id": "a"}})
		y := live(Sandbox{ID: "a", Namespace: "y", Runtime: "half", Rule: halfRule, Vars: map[string]string{"id": "a"}})
		f.Record(&View{Sandboxes: []*Sandbox{x, y}})
		// x changed, y did not: y is still the last with the ID.
		x2 := live(*x)
		f.Record(&View{Sandboxes: []*Sandbox{x2, y}})
		if ns := f.namespaces[runtimeID{"half", "a"}]; ns != "y" {
			t.Errorf("namespace %q, want y", ns)
		}
	})
}
