package model

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// errorLines lists the messages of the errors ParseRules joined, in order.
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

// parseFile parses a rules file of testdata as the command does.
func parseFile(t *testing.T, path string) (Rules, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return ParseRules(data, path)
}

func TestParseRulesErrors(t *testing.T) {
	knownKeys := strings.Join(ruleKeys, ", ")
	tests := []struct {
		file string
		want []string // without the "testdata/rules/" prefix
	}{
		{"unknown_key.toml", []string{
			`unknown_key.toml:10: rule "typo": key "exec": unknown key (known keys: ` + knownKeys + `)`,
			`unknown_key.toml:11: rule "typo": key "supervisor.sokcet_flag": unknown key (known keys: ancestor, socket_flag)`,
		}},
		// toml's own position for "rule.argv" would be line 11, the second
		// rule's argv: the line scan must blame line 6.
		{"bad_regex.toml", []string{
			"bad_regex.toml:6: rule \"vm0\": key \"argv\": error parsing regexp: missing closing ): `--api-sock /run/vm0/sock/(?P<id>[^/ ]+/`",
		}},
		{"missing_name.toml", []string{
			`missing_name.toml:1: rule #1: key "name": required`,
			`missing_name.toml:6: rule #2: key "name": required`,
		}},
		{"no_id.toml", []string{
			`no_id.toml:1: rule "anon": no key yields an ID: add a (?P<id>...) group to exe, comm, argv, cgroup or cwd, or set flag`,
		}},
		{"bad_supervisor.toml", []string{
			`bad_supervisor.toml:4: rule "both": key "supervisor": set exactly one of ancestor or socket_flag`,
			`bad_supervisor.toml:9: rule "neither": key "supervisor": set exactly one of ancestor or socket_flag`,
			`bad_supervisor.toml:14: rule "table": key "supervisor": set exactly one of ancestor or socket_flag`,
			`bad_supervisor.toml:16: rule "table": key "supervisor.socket_flag": "address" is not a flag like --address or -address`,
		}},
		{"bad_cleanup.toml", []string{
			`bad_cleanup.toml:5: rule "vm0": key "cleanup": template "{base}/workspaces/{id}": uses {base}, which no matcher captures`,
			`bad_cleanup.toml:5: rule "vm0": key "cleanup": template "/run/vm0/sock/{id": "{" without "}"`,
		}},
		{"bad_commands.toml", []string{
			`bad_commands.toml:5: rule "pm": key "reconcile": the command "{id}" must be a fixed program name`,
			`bad_commands.toml:6: rule "pm": key "inspect": argument "{root}" uses {root}, which no matcher captures`,
		}},
		{"syntax.toml", []string{
			`syntax.toml:3: invalid TOML: strings cannot contain newlines`,
		}},
		// A key that failed to decode is not also reported as missing, and
		// does not set off the rule-wide "no ID" check.
		{"bad_type.toml", []string{
			`bad_type.toml:3: rule "types": key "exe": must be a string, not an integer`,
			`bad_type.toml:5: rule "types": key "process_group": must be a boolean, not a string`,
			`bad_type.toml:6: rule "types": key "cleanup": must be an array of strings, not a string`,
			`bad_type.toml:7: rule "types": key "id_transform": unknown transform "upper" (known: "underscore-to-dash", "systemd-unescape")`,
			`bad_type.toml:8: rule "types": key "cwd": empty regex: it would match anything`,
			`bad_type.toml:9: rule "types": key "supervisor.ancestor": empty regex: it would match anything`,
			`bad_type.toml:10: rule "types": key "halt_signal": "SIGNOPE" is not a signal (SIGPWR, SIGUSR1, SIGRTMIN+3, …)`,
		}},
		{"top_level.toml", []string{
			`top_level.toml:1: key "version": unknown key: a rules file holds only [[rule]] tables`,
			`top_level.toml:7: key "rules": unknown key: a rules file holds only [[rule]] tables`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "rules", tt.file)
			rs, err := parseFile(t, path)
			if rs != nil {
				t.Errorf("got %d rules alongside the error, want none", len(rs))
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, "testdata/rules/"+w)
			}
			if got := errorLines(err); !slices.Equal(got, want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			var re *RuleError
			if !errors.As(err, &re) || re.File != path || re.Line == 0 {
				t.Errorf("error %v is not a located *RuleError", err)
			}
		})
	}
}

func TestParseRulesValid(t *testing.T) {
	rs, err := parseFile(t, "testdata/rules/valid.toml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Name+"@"+r.Source)
	}
	want := []string{
		"vm0-local@testdata/rules/valid.toml:3",
		"shim@testdata/rules/valid.toml:14",
		"pods@testdata/rules/valid.toml:28",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rules %v, want %v", got, want)
	}
	vm0, shim, pods := rs[0], rs[1], rs[2]
	if !vm0.ProcessGroup || vm0.Supervisor.Ancestor == nil || vm0.Cwd.String() != `^(?P<base>.+)/workspaces/(?P<id>[^/]+)$` {
		t.Errorf("vm0-local decoded as %+v", vm0)
	}
	if want := []string{"{base}/workspaces/{id}", "/run/vm0/sock/{id}"}; !slices.Equal(vm0.Cleanup, want) {
		t.Errorf("cleanup %q, want %q", vm0.Cleanup, want)
	}
	if shim.Flag != "-id" || shim.Supervisor.SocketFlag != "-address" || shim.ExcludeArgv.String() != `(^| )(start|delete)$` {
		t.Errorf("shim decoded as %+v", shim)
	}
	if shim.Comm.String() != "[[rule]]\nname = \"in a string\"\n" {
		t.Errorf("multi-line comm %q", shim.Comm.String())
	}
	if pods.IDTransform != UnderscoreToDash {
		t.Errorf("id_transform %q", pods.IDTransform)
	}
	if pods.HaltSignal != 37 || vm0.HaltSignal != 0 {
		t.Errorf("halt_signal %d, %d; want SIGRTMIN+3 (37), none", pods.HaltSignal, vm0.HaltSignal)
	}
}

func TestParseRulesInlineArray(t *testing.T) {
	// Rules written as an inline array have no [[rule]] headers: their
	// problems are located at "rule =".
	src := "# inline\nrule = [\n  { name = \"a\", flag = \"--id\" },\n  { name = \"b\", exe = 'x' },\n]\n"
	_, err := ParseRules([]byte(src), "inline.toml")
	want := []string{`inline.toml:2: rule "b": no key yields an ID: add a (?P<id>...) group to exe, comm, argv, cgroup or cwd, or set flag`}
	if got := errorLines(err); !slices.Equal(got, want) {
		t.Errorf("errors %q, want %q", got, want)
	}
	rs, err := ParseRules([]byte("rule = [{ name = \"a\", flag = \"--id\" }]\n"), "inline.toml")
	if err != nil || len(rs) != 1 || rs[0].Source != "inline.toml:1" {
		t.Errorf("inline rule: %v, %v", rs, err)
	}
}

func TestParseRulesEmpty(t *testing.T) {
	rs, err := ParseRules([]byte("# nothing yet\n"), "empty.toml")
	if err != nil || len(rs) != 0 {
		t.Errorf("empty file: %v, %v", rs, err)
	}
}

func TestScanLayout(t *testing.T) {
	src := `top = 1
[[rule]]
name = "a" # [[rule]] in a comment
argv = 'x = y'
cleanup = [
  "b = c",
  '[[rule]]',
]
supervisor.ancestor = "r"

[[rule]]
comm = """
[[rule]]
flag = "inside"
\"""
"""
flag = "--id"
[rule.supervisor]
socket_flag = "-address"

[other]
[[rule]]
'name' = "c"
`
	lay := scanLayout([]byte(src))
	if len(lay.rules) != 3 {
		t.Fatalf("found %d [[rule]] headers, want 3", len(lay.rules))
	}
	tests := []struct {
		rule int
		key  string
		want int
	}{
		{0, "name", 3},
		{0, "argv", 4},
		{0, "cleanup", 5},
		{0, "supervisor.ancestor", 9},
		{0, "supervisor", 9},
		{0, "supervisor.nope", 9},
		{0, "exe", 2}, // absent: the header
		{1, "comm", 12},
		{1, "flag", 17},
		{1, "supervisor", 18},
		{1, "supervisor.socket_flag", 19},
		{2, "name", 23},
	}
	for _, tt := range tests {
		if got := lay.keyLine(tt.rule, tt.key); got != tt.want {
			t.Errorf("rule %d key %q on line %d, want %d", tt.rule, tt.key, got, tt.want)
		}
	}
	if lay.topLine("top") != 1 || lay.topLine("other") != 21 {
		t.Errorf("top-level lines %v", lay.top)
	}
}

func TestEffective(t *testing.T) {
	mine := &Rule{Name: "mine", Flag: "--id"}
	user := Rules{mine}
	all := Effective(user, true)
	if len(all) != 1+len(Presets()) || all[0] != mine || all[1].Source != "preset" {
		t.Errorf("Effective(user, true) = %d rules starting %v", len(all), all[0])
	}
	only := Effective(user, false)
	if len(only) != 1 || only[0] != mine {
		t.Errorf("Effective(user, false) = %v", only)
	}
	only[0] = nil
	if user[0] != mine {
		t.Error("Effective shares the caller's backing array")
	}
}

func TestWriteTOMLQuoting(t *testing.T) {
	// Regexes with a quote, a backslash and a control character need a
	// basic string; the rest read best as literal strings.
	r := &Rule{
		Name:    `it's "quoted"`,
		Argv:    mustRegexp(t, `--name 'x\ty' (?P<id>\S+)`+"\t"),
		Cleanup: []string{`/srv/{id}`},
		Source:  "code\nsecond line",
		Doc:     "doc",
	}
	var b strings.Builder
	if err := (Rules{r}).WriteTOML(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# source: code\n# second line\n# doc\n[[rule]]\n", `name = "it's \"quoted\""`, `cleanup = ["/srv/{id}"]`, `argv = "--name 'x\\ty' (?P<id>\\S+)\t"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	back, err := ParseRules([]byte(b.String()), "out.toml")
	if err != nil {
		t.Fatalf("%v in:\n%s", err, b.String())
	}
	if back[0].Name != r.Name || back[0].Argv.String() != r.Argv.String() {
		t.Errorf("round trip gave %q %q", back[0].Name, back[0].Argv)
	}
}
