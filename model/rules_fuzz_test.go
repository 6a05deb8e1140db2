package model

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// FuzzParseRules: a rules file either fails, or yields rules that pass
// Validate, and that WriteTOML prints as a file ParseRules reads back to
// the same rules. Seeded with every rules fixture.
func FuzzParseRules(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "rules", "*.toml"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	var presets bytes.Buffer
	if err := Presets().WriteTOML(&presets); err != nil {
		f.Fatal(err)
	}
	f.Add(presets.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := ParseRules(data, "fuzz.toml")
		if err != nil {
			return
		}
		for _, r := range rules {
			if err := r.Validate(); err != nil {
				t.Errorf("ParseRules accepted rule %q that fails Validate: %v\n%s", r.Name, err, data)
			}
		}
		var out bytes.Buffer
		if err := rules.WriteTOML(&out); err != nil {
			t.Fatalf("WriteTOML of parsed rules: %v\n%s", err, data)
		}
		again, err := ParseRules(out.Bytes(), "again.toml")
		if err != nil {
			t.Fatalf("WriteTOML output does not parse: %v\ninput:\n%s\noutput:\n%s", err, data, out.Bytes())
		}
		if len(again) != len(rules) {
			t.Fatalf("round trip: %d rules, want %d\n%s", len(again), len(rules), out.Bytes())
		}
		for i, r := range rules {
			a, b := r.toTOML(), again[i].toTOML()
			if a.Name != b.Name || a.Exe != b.Exe || a.Comm != b.Comm || a.Argv != b.Argv || a.ExcludeArgv != b.ExcludeArgv ||
				a.Flag != b.Flag || a.Cgroup != b.Cgroup || a.Cwd != b.Cwd || a.IDTransform != b.IDTransform ||
				a.ProcessGroup != b.ProcessGroup || len(a.Cleanup) != len(b.Cleanup) || (a.Supervisor == nil) != (b.Supervisor == nil) ||
				a.Supervisor != nil && *a.Supervisor != *b.Supervisor {
				t.Errorf("round trip of rule %d:\n got %+v\nwant %+v\noutput:\n%s", i, b, a, out.Bytes())
			}
			for j := range a.Cleanup {
				if j < len(b.Cleanup) && a.Cleanup[j] != b.Cleanup[j] {
					t.Errorf("round trip of rule %d cleanup: %q, want %q", i, b.Cleanup, a.Cleanup)
				}
			}
		}
	})
}

// FuzzRequiredLiterals: the prefilter only ever rules out inputs the
// regexp rejects too.
func FuzzRequiredLiterals(f *testing.F) {
	for _, r := range Presets() {
		for _, re := range []*regexp.Regexp{r.Exe, r.Argv, r.ExcludeArgv, r.Cgroup, r.Cwd} {
			if re != nil {
				f.Add(re.String(), "/usr/bin/containerd-shim-runc-v2 -namespace moby -id abc -address /run/x.sock")
				f.Add(re.String(), "systemd-nspawn --machine=web -D /srv/web")
			}
		}
	}
	f.Add(`x(?:a|b)?[=-]y`, "x-y")
	f.Add(`(?:^| )--?n[= ]m(?: |$)`, "a --n=m")
	f.Fuzz(func(t *testing.T, expr, in string) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return
		}
		if re.MatchString(in) && !mayMatch(re, in) {
			t.Fatalf("%q matches %q, but its literals %q rule it out", expr, in, requiredLiterals(expr))
		}
	})
}
