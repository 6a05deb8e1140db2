package model

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"
	"testing"
	"time"
)

// TestRulesLimits: a rules file over any limit is refused with an error
// that names the file, the line and the key where it can, and the limit;
// each refusal comes before the cost it guards against is paid.
func TestRulesLimits(t *testing.T) {
	rule := func(body string) string { return "[[rule]]\nname = \"x\"\nflag = \"--id\"\n" + body }
	cases := []struct {
		name, file, want string
	}{
		{"file size", rule("") + "# " + strings.Repeat("x", MaxRulesFileBytes) + "\n",
			"f.toml: over the limit: the file is larger than 1048576 bytes (1 MiB), the limit"},
		{"rule count", strings.Repeat(rule(""), MaxRules+1),
			fmt.Sprintf("f.toml:%d: over the limit: the file has 1001 rules; the limit is 1000", 3*MaxRules+1)},
		{"unclosed arrays", "x = " + strings.Repeat("[", 300000),
			"f.toml:1: over the limit: arrays and tables nest more than 16 deep"},
		{"nested inline tables", "x = " + strings.Repeat("{a=\n", 3000),
			"f.toml:17: over the limit: arrays and tables nest more than 16 deep"},
		{"pattern length", rule("argv = '" + strings.Repeat("a", MaxPatternBytes+1) + "'\n"),
			`f.toml:4: rule "x": key "argv": over the limit: the regex is 4097 bytes; the limit is 4096`},
		{"program size", rule("argv = '[a-z]{1,1000}[0-9]{1,1000}[A-Z]{1,1000}[a-f]{1,1000}[b-y]{1,1000}[c-x]{1,1000}'\n"),
			`f.toml:4: rule "x": key "argv": over the limit: the regex compiles to 11996 instructions; the limit is 10000`},
		{"program size far over", rule("argv = '" + strings.Repeat("[a-z]{1000}", 50) + "'\n"),
			`f.toml:4: rule "x": key "argv": over the limit: the regex compiles to far more than 10000 instructions, the limit`},
		{"program size of the supervisor", rule("supervisor = { ancestor = '" + strings.Repeat("[a-z]{1000}", 50) + "' }\n"),
			`f.toml:4: rule "x": key "supervisor.ancestor": over the limit: the regex compiles to far more than 10000 instructions, the limit`},
		{"programs together", strings.Repeat(rule("argv = '[a-z]{1,1000}[0-9]{1,1000}[A-Z]{1,1000}'\n"), 40),
			`key "argv": over the limit: the file's regexes compile to more than 200000 instructions together, the limit`},
		{"value length", rule("cleanup = ['/var/" + strings.Repeat("a", MaxValueBytes) + "/{id}']\n"),
			`f.toml:4: rule "x": key "cleanup": over the limit: an item is 4106 bytes; the limit is 4096`},
		{"name length", "[[rule]]\nflag = \"--id\"\nname = \"" + strings.Repeat("n", MaxValueBytes+1) + "\"\n",
			`key "name": over the limit: the value is 4097 bytes; the limit is 4096`},
		{"list length", rule("reconcile = ['true'" + strings.Repeat(", '{id}'", MaxListItems) + "]\n"),
			`f.toml:4: rule "x": key "reconcile": over the limit: the list has 65 items; the limit is 64`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := ParseRules([]byte(c.file), "f.toml")
			// Without the limits, the nesting cases took minutes; with
			// them a refusal takes milliseconds, seconds under -race.
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("took %v to refuse", took)
			}
			if err == nil || !errors.Is(err, errTooBig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant an error holding %q", err, c.want)
			}
		})
	}
	// Just under every limit is fine.
	ok := strings.Repeat(rule("argv = '[a-z]{1,30}(?P<id>"+strings.Repeat("b", 90)+")'\ncleanup = ['/var/"+strings.Repeat("a", 200)+"/{id}']\n"), MaxRules)
	if _, err := ParseRules([]byte(ok), "f.toml"); err != nil {
		t.Fatalf("a file within the limits: %v", err)
	}
}

// TestInstBound: the bound that refuses a pattern before it is compiled
// is never below the compiled size, and never far above it.
func TestInstBound(t *testing.T) {
	for _, s := range []string{`a`, `abc`, `[ab][cd][ef][gh]`, `(a|b|c)*`, `x{2,5}`, `(?:(?:(?:a{2}){2}){2}){2}`, `a{3,}`, `^(?P<id>[^/]+)$`,
		`(?:^| )--?n[= ]m(?: |$)`, `[a-z]{1,1000}`, `(?:[ab]{0,3}c){20}`} {
		re, n, err := compilePattern(s)
		if err != nil || re == nil {
			t.Fatalf("%s: %v", s, err)
		}
		tree, _ := parsePerl(s)
		if b := instBound(tree); b < n-3 || b > 4*n {
			t.Errorf("%s: bound %d for %d instructions", s, b, n)
		}
	}
}

func parsePerl(s string) (*syntax.Regexp, error) { return syntax.Parse(s, syntax.Perl) }
