package model

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc"
)

func mustRegexp(t testing.TB, s string) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return re
}

// argvOf splits a command line on spaces, the way tests write argv.
func argvOf(cmdline string) []string { return strings.Fields(cmdline) }

func TestFlagValue(t *testing.T) {
	tests := []struct {
		name, cmdline, flag string
		want                string
		ok                  bool
	}{
		{"separate token", "shim -namespace k8s.io -id abc -address /run/c.sock", "-id", "abc", true},
		{"joined with =", "shim -id=abc", "-id", "abc", true},
		{"go flag two-dash spelling", "shim --id abc", "-id", "abc", true},
		{"go flag two-dash joined", "shim --id=abc", "-id", "abc", true},
		{"two-dash flag is exact", "fc -id abc", "--id", "", false},
		{"namespace value is not the id", "shim -namespace -id", "-id", "", false},
		{"prefix is not the flag", "shim -idx abc", "-id", "", false},
		{"argv[0] is not a flag", "-id abc", "-id", "", false},
		{"last token has no value", "shim -address /s -id", "-id", "", false},
		{"empty joined value", "shim -id=", "-id", "", true},
		{"options end at --", "bwrap --bind a a -- /shim --id abc", "--id", "", false},
		{"first occurrence", "fc --id one --id two", "--id", "one", true},
		{"no flag asked", "fc --id one", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := FlagValue(argvOf(tt.cmdline), tt.flag)
			if got != tt.want || ok != tt.ok {
				t.Errorf("FlagValue(%q, %q) = %q, %v; want %q, %v", tt.cmdline, tt.flag, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestIDTransform(t *testing.T) {
	tests := []struct {
		t       IDTransform
		in, out string
	}{
		{IDTransformNone, "a_b", "a_b"},
		{UnderscoreToDash, "1234abcd_5678_90ab", "1234abcd-5678-90ab"},
		{SystemdUnescape, `fedora\x2d38`, "fedora-38"},
		{SystemdUnescape, `qemu\x2d1\x2dwin10`, "qemu-1-win10"},
		{SystemdUnescape, `a\x2Fb`, "a/b"},
		{SystemdUnescape, `bad\xZZ`, `bad\xZZ`},
		{SystemdUnescape, `short\x2`, `short\x2`},
		{SystemdUnescape, `end\x`, `end\x`},
		{SystemdUnescape, `\x41\x42`, "AB"},
	}
	for _, tt := range tests {
		if got := tt.t.Apply(tt.in); got != tt.out {
			t.Errorf("%q.Apply(%q) = %q, want %q", tt.t, tt.in, got, tt.out)
		}
	}
	if IDTransform("upper").Valid() || !SystemdUnescape.Valid() || !IDTransformNone.Valid() {
		t.Error("Valid disagrees with the known transforms")
	}
}

func TestRuleMatch(t *testing.T) {
	re := func(s string) *regexp.Regexp { return mustRegexp(t, s) }
	sbx := &proc.Process{
		PID:     10,
		Comm:    "sandboxd",
		Argv:    argvOf("/opt/bin/sandboxd --sandbox argv-id --id flag-id"),
		Exe:     "/opt/bin/sandboxd (deleted)",
		Cwd:     "/srv/work/cwd-id (deleted)",
		Cgroup:  "/",
		Freezer: "/boxes/cgroup-id",
	}
	tests := []struct {
		name    string
		rule    Rule
		p       *proc.Process
		wantID  string
		wantBy  string
		vars    map[string]string
		noMatch bool
	}{
		{name: "exe id first", rule: Rule{
			Exe:  re(`/opt/(?P<id>bin)/`),
			Argv: re(`--sandbox (?P<id>\S+)`),
		}, wantID: "bin", wantBy: ByExe, vars: map[string]string{"id": "bin"}},
		{name: "argv before flag", rule: Rule{Argv: re(`--sandbox (?P<id>\S+)`), Flag: "--id"}, wantID: "argv-id", wantBy: ByArgv},
		{name: "flag before cgroup", rule: Rule{Flag: "--id", Cgroup: re(`/boxes/(?P<id>.+)`)}, wantID: "flag-id", wantBy: ByFlag},
		{name: "cgroup falls back to freezer", rule: Rule{Cgroup: re(`/boxes/(?P<id>.+)`), Cwd: re(`(?P<id>[^/]+)$`)}, wantID: "cgroup-id", wantBy: ByCgroup},
		{name: "cwd without (deleted)", rule: Rule{Cwd: re(`^(?P<base>/.+)/(?P<id>[^/]+)$`)}, wantID: "cwd-id", wantBy: ByCwd,
			vars: map[string]string{"id": "cwd-id", "base": "/srv/work"}},
		{name: "exe path when argv[0] differs", rule: Rule{Exe: re(`^/opt/bin/sandboxd$`), Flag: "--id"}, wantID: "flag-id", wantBy: ByFlag},
		{name: "comm", rule: Rule{Comm: re(`^sandbox(?P<id>d)$`)}, wantID: "d", wantBy: ByComm},
		{name: "every matcher must match", rule: Rule{Exe: re(`sandboxd`), Argv: re(`--absent (?P<id>\S+)`)}, noMatch: true},
		{name: "exclude_argv", rule: Rule{Flag: "--id", ExcludeArgv: re(`--sandbox`)}, noMatch: true},
		{name: "exclude_argv that misses", rule: Rule{Flag: "--id", ExcludeArgv: re(`(^| )start$`)}, wantID: "flag-id", wantBy: ByFlag},
		{name: "empty id capture falls through", rule: Rule{Argv: re(`--sandbox (?P<id>x*)`), Flag: "--id"}, wantID: "flag-id", wantBy: ByFlag},
		{name: "empty id is no match", rule: Rule{Argv: re(`--sandbox (?P<id>x*)`)}, noMatch: true},
		{name: "first matcher's var wins", rule: Rule{
			Argv: re(`(?P<where>--sandbox) (?P<id>\S+)`),
			Cwd:  re(`^(?P<where>/srv)`),
		}, wantID: "argv-id", wantBy: ByArgv, vars: map[string]string{"id": "argv-id", "where": "--sandbox"}},
		{name: "group of an alternative that did not match", rule: Rule{
			Argv: re(`--nothing (?P<id>\S+)|--sandbox (?P<id>\S+)`),
		}, wantID: "argv-id", wantBy: ByArgv, vars: map[string]string{"id": "argv-id"}},
		{name: "transform", rule: Rule{Argv: re(`--sandbox (?P<id>\S+)`), IDTransform: SystemdUnescape}, wantID: "argv-id", wantBy: ByArgv},
		{name: "kernel thread", rule: Rule{Comm: re(`(?P<id>.+)`)}, p: &proc.Process{Comm: "kworker/0:1", Kernel: true}, noMatch: true},
		{name: "unknown field never matches", rule: Rule{Cwd: re(`(?P<id>.*)`), Flag: "--x"}, p: &proc.Process{Argv: argvOf("a --x 1")}, noMatch: true},
		{name: "zombie has no argv", rule: Rule{Argv: re(`(?P<id>.*)`)}, p: &proc.Process{State: 'Z'}, noMatch: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			if p == nil {
				p = sbx
			}
			tt.rule.Name = "test"
			m, ok := tt.rule.Match(p)
			if ok == tt.noMatch {
				t.Fatalf("matched = %v (%+v), want %v", ok, m, !tt.noMatch)
			}
			if tt.noMatch {
				return
			}
			if m.ID != tt.wantID || m.By != tt.wantBy || m.Rule.Name != "test" {
				t.Errorf("match %q by %q (rule %q), want %q by %q", m.ID, m.By, m.Rule.Name, tt.wantID, tt.wantBy)
			}
			if m.Vars["id"] != m.ID {
				t.Errorf("Vars[id] = %q, want the ID %q", m.Vars["id"], m.ID)
			}
			if tt.vars != nil && !maps.Equal(m.Vars, tt.vars) {
				t.Errorf("vars %v, want %v", m.Vars, tt.vars)
			}
		})
	}
}

func TestRulesMatchFirstWins(t *testing.T) {
	p := &proc.Process{Argv: argvOf("fc --id abc")}
	first := &Rule{Name: "first", Flag: "--id"}
	rs := Rules{nil, &Rule{Name: "never", Flag: "--absent"}, first, &Rule{Name: "second", Flag: "--id"}}
	if m, ok := rs.Match(p); !ok || m.Rule != first {
		t.Errorf("Rules.Match = %+v, %v; want the first matching rule", m, ok)
	}
	if _, ok := rs.Match(&proc.Process{Argv: argvOf("fc --id abc"), Kernel: true}); ok {
		t.Error("a kernel thread matched")
	}
	if _, ok := (Rules{}).Match(p); ok {
		t.Error("no rules matched")
	}
}

func TestExpand(t *testing.T) {
	m := Match{Vars: map[string]string{"id": "abc", "base": "/data"}}
	tests := map[string]string{
		"{base}/workspaces/{id}": "/data/workspaces/abc",
		"/run/vm0/sock/{id}":     "/run/vm0/sock/abc",
		"/x/{missing}/{id}":      "/x/{missing}/abc",
		"/open/{id":              "/open/{id",
		"/plain":                 "/plain",
		"{id}{id}":               "abcabc",
	}
	for in, want := range tests {
		if got := m.Expand(in); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCleanupPathsMustNameTheSandbox(t *testing.T) {
	// The ID inside a longer component, or not at all, does not make a
	// directory the sandbox's own: /run/xabc could be anybody's.
	rule := &Rule{Cleanup: []string{"/run/x{id}", "/run/shared", "/run/{id}/sock"}}
	got, err := Match{Rule: rule, ID: "abc", Vars: map[string]string{"id": "abc"}}.CleanupPaths()
	if !slices.Equal(got, []string{"/run/abc/sock"}) || err == nil || !strings.Contains(err.Error(), `"/run/xabc" is not an absolute, clean path naming the sandbox ID`) {
		t.Errorf("CleanupPaths = %q, %v", got, err)
	}
}

func TestCleanupPaths(t *testing.T) {
	rule := &Rule{Cleanup: []string{"{base}/workspaces/{id}", "/run/vm0/sock/{id}"}}
	tests := []struct {
		name    string
		vars    map[string]string
		want    []string
		wantErr string
	}{
		{"both", map[string]string{"id": "abc", "base": "/data/r1"}, []string{"/data/r1/workspaces/abc", "/run/vm0/sock/abc"}, ""},
		{"no base", map[string]string{"id": "abc"}, []string{"/run/vm0/sock/abc"}, "{base} has no value"},
		{"empty base", map[string]string{"id": "abc", "base": ""}, []string{"/run/vm0/sock/abc"}, "{base} has no value"},
		{"dot-dot id", map[string]string{"id": "..", "base": "/data"}, nil, `{id} is "..", which is not one path component`},
		{"slash in id", map[string]string{"id": "a/b", "base": "/data"}, nil, `{id} is "a/b", which is not one path component`},
		{"base of /", map[string]string{"id": "abc", "base": "/"}, []string{"/run/vm0/sock/abc"}, `{base} is "/", not an absolute, clean directory other than /`},
		{"relative base", map[string]string{"id": "abc", "base": "data"}, []string{"/run/vm0/sock/abc"}, `{base} is "data", not an absolute, clean directory`},
		{"dot-dot in base", map[string]string{"id": "abc", "base": "/data/../etc"}, []string{"/run/vm0/sock/abc"}, `{base} is "/data/../etc", not an absolute, clean directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Match{Rule: rule, ID: tt.vars["id"], Vars: tt.vars}.CleanupPaths()
			if !slices.Equal(got, tt.want) {
				t.Errorf("paths %q, want %q", got, tt.want)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestPlaceholders(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"{base}/workspaces/{id}", []string{"base", "id"}, false},
		{"/plain", nil, false},
		{"/a/{id", nil, true},
		{"/a/id}", nil, true},
		{"/a/{}", nil, true},
		{"/a/{x{y}}", nil, true},
		{"/a/{not a name}", nil, true},
	}
	for _, tt := range tests {
		got, err := placeholders(tt.in)
		if !slices.Equal(got, tt.want) || (err != nil) != tt.wantErr {
			t.Errorf("placeholders(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// ordinaryProcesses is what most of a host looks like to the rules: none
// of them is in a sandbox.
func ordinaryProcesses() []*proc.Process {
	return []*proc.Process{
		{PID: 812, Comm: "sshd", Argv: argvOf("sshd: alice [priv]"), Exe: "/usr/sbin/sshd", Cwd: "/", Cgroup: "/system.slice/ssh.service"},
		{PID: 901, Comm: "bash", Argv: argvOf("-bash"), Exe: "/usr/bin/bash", Cwd: "/home/alice", Cgroup: "/user.slice/user-1000.slice/session-3.scope"},
		{PID: 950, Comm: "containerd", Argv: argvOf("/usr/bin/containerd"), Exe: "/usr/bin/containerd", Cwd: "/", Cgroup: "/system.slice/containerd.service"},
		{PID: 977, Comm: "python3", Argv: argvOf("/usr/bin/python3 -m http.server 8000"), Exe: "/usr/bin/python3.12", Cwd: "/srv/www", Cgroup: "/user.slice/user-1000.slice/user@1000.service/app.slice/web.service"},
	}
}

func TestRulesMatchAllocatesNothingForOrdinaryProcesses(t *testing.T) {
	rs := Presets()
	for _, p := range ordinaryProcesses() {
		if m, ok := rs.Match(p); ok {
			t.Fatalf("%v matched preset %q", p.Argv, m.Rule.Name)
		}
		if n := testing.AllocsPerRun(200, func() { rs.Match(p) }); n != 0 {
			t.Errorf("Rules.Match(%v) allocates %.1f times per call, want 0", p.Argv, n)
		}
	}
}

func BenchmarkRulesMatch(b *testing.B) {
	rs := Presets()
	procs := ordinaryProcesses()
	procs = append(procs,
		&proc.Process{Argv: argvOf("/usr/bin/containerd-shim-runc-v2 -namespace moby -id 3f4e5d6c7b8a99887766554433221100ffeeddccbbaa99887766554433221100 -address /run/containerd/containerd.sock")},
		&proc.Process{Argv: argvOf("/usr/local/bin/firecracker --api-sock /run/vm0/sock/550e8400-e29b-41d4-a716-446655440000/api.sock"), Cwd: "/data/runner-01/workspaces/550e8400-e29b-41d4-a716-446655440000"},
	)
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range procs {
			rs.Match(p)
		}
	}
}
