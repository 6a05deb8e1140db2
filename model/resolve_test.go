package model

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc"
)

func TestResolve(t *testing.T) {
	v := Build(snap(
		pr(300, 1, "sim --sandbox 0123456789abcdef-one"),
		pr(310, 1, "sim --sandbox 0123456789abcdef-two"),
		pr(320, 1, "sim --sandbox ffff0000"),
	), rules, nil)
	tests := []struct {
		arg, want, errHas string
	}{
		{arg: "ffff0000", want: "ffff0000"},
		{arg: "ff", want: "ffff0000"},
		{arg: "0123456789abcdef-t", want: "0123456789abcdef-two"},
		{arg: "0123", errHas: "ambiguous; candidates:\n  0123456789abcdef-one  sim\n  0123456789abcdef-two  sim"},
		{arg: "nope", errHas: `no sandbox ID starts with "nope"; 3 sandboxes on this host, the nearest:`},
		{arg: "", errHas: "empty sandbox ID"},
		{arg: "  ", errHas: "empty sandbox ID"},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			sb, err := v.Resolve(tc.arg)
			if tc.errHas != "" {
				if err == nil || !errors.Is(err, ErrResolve) || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want ErrResolve containing %q", err, tc.errHas)
				}
				return
			}
			if err != nil || sb.ID != tc.want {
				t.Fatalf("got %v, %v; want %s", sb, err, tc.want)
			}
		})
	}
}

// TestResolveListsNearestOnly: an unknown ID on a host of many sandboxes
// names at most ten, the nearest first (shared prefix, then edit
// distance), and says how many there are.
func TestResolveListsNearestOnly(t *testing.T) {
	var procs []*proc.Process
	for i := range 40 {
		procs = append(procs, pr(300+i, 1, fmt.Sprintf("sim --sandbox %04x0000", i*7)))
	}
	procs = append(procs, pr(400, 1, "sim --sandbox beef1234"), pr(401, 1, "sim --sandbox beaf1234"))
	v := Build(snap(procs...), rules, nil)
	_, err := v.Resolve("beef1243")
	if err == nil {
		t.Fatal("resolved a mistyped ID")
	}
	msg := err.Error()
	if !strings.Contains(msg, "42 sandboxes on this host, the nearest:\n  beef1234  sim\n  beaf1234  sim\n") {
		t.Errorf("error does not list beef1234 then beaf1234 first:\n%s", msg)
	}
	if n := strings.Count(msg, "\n  "); n != maxCandidates {
		t.Errorf("%d candidates listed, want %d:\n%s", n, maxCandidates, msg)
	}
	// An ambiguous prefix of many is cut the same way.
	_, err = v.Resolve("0")
	if n := strings.Count(err.Error(), "\n  "); n != maxCandidates+1 || !strings.Contains(err.Error(), "… and ") {
		t.Errorf("ambiguous prefix lists %d lines:\n%s", n, err)
	}
}

func TestShortIDs(t *testing.T) {
	got := ShortIDs([]string{
		"0123456789abcdef-one", "0123456789abcdef-two", "ffff0000", "aaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaab",
	}, 12)
	want := map[string]string{
		"0123456789abcdef-one": "0123456789abcdef-o",
		"0123456789abcdef-two": "0123456789abcdef-t",
		"ffff0000":             "ffff0000",
		"aaaaaaaaaaaaaaaaaaaa": "aaaaaaaaaaaaaaaaaaaa",
		"aaaaaaaaaaaaaaaaaaab": "aaaaaaaaaaaaaaaaaaab",
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("ShortIDs[%s] = %q, want %q", id, got[id], w)
		}
	}
	if g := ShortIDs([]string{"7d1e2c3a-1111-4a4a-9b9b-0123456789ab"}, 12)["7d1e2c3a-1111-4a4a-9b9b-0123456789ab"]; g != "7d1e2c3a-111" {
		t.Errorf("lone ID shortened to %q, want 12 chars", g)
	}
}

func TestResolveNamespacesAndRuntimes(t *testing.T) {
	v := Build(snap(
		pr(300, 1, "/usr/bin/containerd-shim-runc-v2 -namespace team-a -id web-frontend -address /a.sock"),
		pr(301, 300, "sh"),
		pr(310, 1, "/usr/bin/containerd-shim-runc-v2 -namespace team-b -id web-frontend -address /a.sock"),
		pr(320, 1, "/usr/bin/containerd-shim-runc-v2 -namespace team-a -id w3b34 -address /a.sock"),
		pr(330, 1, "sim --sandbox w3b34"),
		pr(340, 1, "sim --sandbox lonely-one"),
	), rules, nil)
	tests := []struct {
		arg, want, errHas string
	}{
		{arg: "web-frontend", errHas: "\"web-frontend\" names 2 sandboxes; say which; candidates:\n  team-a/web-frontend  containerd\n  team-b/web-frontend  containerd"},
		{arg: "web", errHas: "ambiguous"},
		{arg: "team-a/web-frontend", want: "containerd:team-a/web-frontend"},
		{arg: "team-b/web", want: "containerd:team-b/web-frontend"},
		{arg: "containerd:team-b/web-frontend", want: "containerd:team-b/web-frontend"},
		{arg: "w3b34", errHas: "candidates:\n  sim:w3b34  sim\n  team-a/w3b34  containerd"},
		{arg: "team-a/w3b34", want: "containerd:team-a/w3b34"},
		{arg: "sim:w3b34", want: "sim:w3b34"},
		{arg: "lonely", want: "sim:lonely-one"},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			sb, err := v.Resolve(tc.arg)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want one containing %q", err, tc.errHas)
				}
				return
			}
			if err != nil || sb.Key() != tc.want {
				t.Fatalf("got %v, %v; want %s", sb, err, tc.want)
			}
		})
	}
	names := v.ShortNames(MinShortID)
	for _, sb := range v.Sandboxes {
		got, err := v.Resolve(names[sb])
		if err != nil || got != sb {
			t.Errorf("the shown name %q resolves to %v, %v; want %s", names[sb], got, err, sb.Key())
		}
	}
	if got := names[v.Sandbox("sim:w3b34")]; got != "sim:w3b34" {
		t.Errorf("shown %q for the sim sandbox whose ID a containerd one shares", got)
	}
}

// TestResolveNeverTakesARuntimeOrNamespace: on a host holding exactly one
// sandbox of a runtime (and of a namespace), the runtime's name, the
// namespace, "runtime:", "ns/" and "runtime:ns/" are errors that list the
// sandbox, never that sandbox; the same words match nothing in the
// prefix test the filter and completion share. A prefix of the ID after
// any of them still resolves.
func TestResolveNeverTakesARuntimeOrNamespace(t *testing.T) {
	runtimes := map[string]string{} // runtime -> a namespace it uses
	for _, r := range Presets() {
		runtimes[r.Name] = ""
	}
	runtimes["docker"], runtimes["containerd"], runtimes["kata"], runtimes["cube"] = "moby", "k8s.io", "default", "cube"
	// The demo fleet's own names for its runtimes (cmd/sandsim/fleet).
	for _, rt := range []string{"jailer", "k8s", "cloudflare"} {
		runtimes[rt] = ""
	}
	const id = "7d1e2c3a00000000000000000000000000000000000000000000000000000042"
	for rt, ns := range runtimes {
		sb := &Sandbox{ID: id, Runtime: rt, Namespace: ns}
		v := &View{Sandboxes: []*Sandbox{sb}, byID: map[string]int32{sb.Key(): 0}}
		words := []string{rt, rt + ":"}
		if ns != "" {
			words = append(words, ns, ns+"/", rt+":"+ns+"/")
		}
		for _, w := range words {
			t.Run(rt+"/"+w, func(t *testing.T) {
				got, err := v.Resolve(w)
				if err == nil || !errors.Is(err, ErrResolve) {
					t.Fatalf("Resolve(%q) = %v, %v; want an error", w, got, err)
				}
				if !strings.Contains(err.Error(), "\n  "+sb.Name()+"  "+rt) && !strings.Contains(err.Error(), "not a sandbox") {
					t.Errorf("the error does not list the sandbox it could mean:\n%v", err)
				}
				if sb.HasNamePrefix(w, strings.HasPrefix) {
					t.Errorf("%q counts as a prefix of %s", w, sb.Key())
				}
			})
		}
		for _, w := range []string{id[:4], rt + ":" + id[:4], qualify(ns, id[:4]), rt + ":" + qualify(ns, id[:4]), sb.Key(), sb.Name()} {
			if got, err := v.Resolve(w); err != nil || got != sb {
				t.Errorf("Resolve(%q) = %v, %v; want %s", w, got, err, sb.Key())
			}
		}
	}
}
