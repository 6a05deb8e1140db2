package model

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Rules is an ordered list of rules: the first rule that matches a process
// claims it.
type Rules []*Rule

// Effective returns the rules sandtop uses: the user's rules first, so they
// can override a preset, then the presets unless presets is false.
func Effective(user Rules, presets bool) Rules {
	out := slices.Clone(user)
	if presets {
		out = append(out, Presets()...)
	}
	return out
}

// RuleError is one problem in a rules file, located by line and key.
type RuleError struct {
	File string
	Line int
	// Rule is `rule "name"` or `rule #N`; empty for a problem outside any rule.
	Rule string
	// Key is the offending key ("argv", "supervisor.ancestor"); empty for
	// a problem with the rule as a whole.
	Key string
	Err error
}

func (e *RuleError) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	}
	if e.Rule != "" {
		b.WriteString(e.Rule + ": ")
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *RuleError) Unwrap() error { return e.Err }

// RuleKeys returns the keys a [[rule]] table may hold, in the order
// WriteTOML writes them: the one list the parser, the writer and the
// documentation's tests read.
func RuleKeys() []string { return slices.Clone(ruleKeys) }

var ruleKeys = []string{"name", "exe", "comm", "argv", "exclude_argv", "flag", "cgroup", "own_cgroup", "cwd",
	"namespace_flag", "nested_pid_namespace", "id_transform", "process_group", "guest", "exits_after_workload", "halt_signal", "supervisor", "cleanup", "leftovers", "reconcile", "inspect"}

// ParseRules parses a rules file of [[rule]] tables. It reports every
// problem it finds, each as a *RuleError on its own line naming the file,
// the line and the key. Each rule's Source is "filename:line" of its
// [[rule]] header. A file beyond the limits (rules_limits.go) is refused
// with the limit it exceeds.
func ParseRules(data []byte, filename string) (Rules, error) {
	if len(data) > MaxRulesFileBytes {
		return nil, &RuleError{File: filename, Err: fmt.Errorf("%w: the file is larger than %d bytes (1 MiB), the limit", errTooBig, MaxRulesFileBytes)}
	}
	if line := nestingProblem(data); line > 0 {
		return nil, &RuleError{File: filename, Line: line, Err: fmt.Errorf("%w: arrays and tables nest more than %d deep", errTooBig, maxNesting)}
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &RuleError{File: filename, Line: pe.Position.Line, Err: fmt.Errorf("invalid TOML: %s", pe.Message)}
		}
		return nil, &RuleError{File: filename, Line: 1, Err: fmt.Errorf("invalid TOML: %w", err)}
	}
	p := &parser{file: filename, lay: scanLayout(data)}
	for key := range doc {
		if key != "rule" {
			p.fail(p.lay.topLine(key), "", key, errors.New("unknown key: a rules file holds only [[rule]] tables"))
		}
	}
	var raws []map[string]any
	switch v := doc["rule"].(type) {
	case nil:
	case []map[string]any:
		raws = v
	case []any:
		for _, e := range v {
			if m, ok := e.(map[string]any); ok {
				raws = append(raws, m)
			}
		}
		if len(raws) != len(v) {
			p.fail(p.lay.topLine("rule"), "", "rule", errors.New("must be an array of tables; write each rule as [[rule]]"))
		}
	default:
		p.fail(p.lay.topLine("rule"), "", "rule", errors.New("must be an array of tables; write each rule as [[rule]]"))
	}
	if len(p.lay.rules) != len(raws) {
		// Rules written as an inline array: locate everything at "rule =".
		p.lay.rules = nil
	}
	if len(raws) > MaxRules {
		return nil, &RuleError{File: filename, Line: p.lay.ruleLine(MaxRules), Err: fmt.Errorf("%w: the file has %d rules; the limit is %d", errTooBig, len(raws), MaxRules)}
	}
	var rules Rules
	for i, raw := range raws {
		rules = append(rules, p.rule(i, raw))
	}
	if len(p.errs) > 0 {
		sort.SliceStable(p.errs, func(a, b int) bool { return p.errs[a].Line < p.errs[b].Line })
		errs := make([]error, len(p.errs))
		for i, e := range p.errs {
			errs[i] = e
		}
		return nil, errors.Join(errs...)
	}
	return rules, nil
}

type parser struct {
	file string
	lay  tomlLayout
	errs []*RuleError
	// insts counts the instructions of the regexes compiled so far,
	// against MaxRulesInsts.
	insts int
}

// errReported is a problem already reported elsewhere: the key it stops
// is unusable, but not worth another line.
var errReported = errors.New("reported")

// compile compiles one of a rule's regexes within the limits of one
// pattern and of the whole file.
func (p *parser) compile(s string) (*regexp.Regexp, error) {
	re, n, err := compilePattern(s)
	if err != nil {
		return nil, err
	}
	if p.insts += n; p.insts > MaxRulesInsts {
		if p.insts-n > MaxRulesInsts {
			return nil, errReported // once is enough
		}
		return nil, fmt.Errorf("%w: the file's regexes compile to more than %d instructions together, the limit", errTooBig, MaxRulesInsts)
	}
	return re, nil
}

func (p *parser) fail(line int, rule, key string, err error) {
	p.errs = append(p.errs, &RuleError{File: p.file, Line: line, Rule: rule, Key: key, Err: err})
}

// rule decodes the i-th [[rule]] table. Keys are visited in a fixed order so
// that errors on the same line come out in the same order every time.
func (p *parser) rule(i int, raw map[string]any) *Rule {
	r := &Rule{Source: fmt.Sprintf("%s:%d", p.file, p.lay.ruleLine(i))}
	label := fmt.Sprintf("rule #%d", i+1)
	if s, ok := raw["name"].(string); ok && s != "" {
		label = fmt.Sprintf("rule %q", s)
	}
	bad := map[string]bool{} // keys already reported, whose value is unusable
	fail := func(key string, err error) {
		bad[key] = true
		p.fail(p.lay.keyLine(i, key), label, key, err)
	}
	regex := func(key string) *regexp.Regexp {
		s, ok := str(raw, key, fail)
		if !ok {
			return nil
		}
		if s == "" {
			fail(key, errors.New("empty regex: it would match anything"))
			return nil
		}
		re, err := p.compile(s)
		switch {
		case errors.Is(err, errReported):
			bad[key] = true
		case err != nil:
			fail(key, err)
		}
		return re
	}
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		switch key {
		case "name":
			r.Name, _ = str(raw, key, fail)
		case "exe":
			r.Exe = regex(key)
		case "comm":
			r.Comm = regex(key)
		case "argv":
			r.Argv = regex(key)
		case "exclude_argv":
			r.ExcludeArgv = regex(key)
		case "cgroup":
			r.Cgroup = regex(key)
		case "own_cgroup":
			r.OwnCgroup = regex(key)
		case "cwd":
			r.Cwd = regex(key)
		case "flag":
			r.Flag, _ = str(raw, key, fail)
		case "id_transform":
			s, _ := str(raw, key, fail)
			r.IDTransform = IDTransform(s)
		case "namespace_flag":
			r.NamespaceFlag, _ = str(raw, key, fail)
		case "nested_pid_namespace":
			r.NestedPIDNamespace = boolean(raw, key, fail)
		case "process_group":
			r.ProcessGroup = boolean(raw, key, fail)
		case "guest":
			r.Guest = boolean(raw, key, fail)
		case "exits_after_workload":
			r.ExitsAfterWorkload = boolean(raw, key, fail)
		case "halt_signal":
			if v, ok := str(raw, key, fail); ok {
				sig, err := ParseHaltSignal(v)
				if err != nil {
					fail(key, err)
				}
				r.HaltSignal = sig
			}
		case "reconcile":
			r.Reconcile = strs(raw, key, fail)
		case "inspect":
			r.Inspect = strs(raw, key, fail)
		case "cleanup":
			r.Cleanup = strs(raw, key, fail)
		case "leftovers":
			r.Leftovers = strs(raw, key, fail)
		case "supervisor":
			r.Supervisor = p.supervisor(raw[key], fail)
		default:
			fail(key, fmt.Errorf("unknown key (known keys: %s)", strings.Join(ruleKeys, ", ")))
		}
	}
	// A key that failed to decode is zero in r: checks that look at it, or
	// across keys at a matcher that failed, would only add noise.
	undecoded := maps.Clone(bad)
	broken := bad["exe"] || bad["comm"] || bad["argv"] || bad["cgroup"] || bad["cwd"] || bad["flag"]
	for _, prob := range r.problems() {
		if undecoded[prob.key] || broken && (prob.key == "" || prob.key == "cleanup") {
			continue
		}
		fail(prob.key, prob.err)
	}
	return r
}

func (p *parser) supervisor(v any, fail func(string, error)) Supervisor {
	var s Supervisor
	m, ok := v.(map[string]any)
	if !ok {
		fail("supervisor", wrongType("a table", v))
		return s
	}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		val := m[key]
		switch key {
		case "ancestor":
			src, ok := val.(string)
			if !ok {
				fail("supervisor.ancestor", wrongType("a string", val))
				continue
			}
			if src == "" {
				fail("supervisor.ancestor", errors.New("empty regex: it would match anything"))
				continue
			}
			re, err := p.compile(src)
			if err != nil && !errors.Is(err, errReported) {
				fail("supervisor.ancestor", err)
			}
			s.Ancestor = re
		case "socket_flag":
			if s.SocketFlag, ok = val.(string); !ok {
				fail("supervisor.socket_flag", wrongType("a string", val))
			}
		default:
			fail("supervisor."+key, errors.New("unknown key (known keys: ancestor, socket_flag)"))
		}
	}
	_, hasA := m["ancestor"]
	_, hasS := m["socket_flag"]
	if !hasA && !hasS {
		// Both set is one of Rule.problems; neither can only be written here.
		fail("supervisor", errors.New("set exactly one of ancestor or socket_flag"))
	}
	return s
}

func str(raw map[string]any, key string, fail func(string, error)) (string, bool) {
	v, ok := raw[key]
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		fail(key, wrongType("a string", v))
	}
	if ok && len(s) > MaxValueBytes && !patternKeys[key] {
		fail(key, fmt.Errorf("%w: the value is %d bytes; the limit is %d", errTooBig, len(s), MaxValueBytes))
		return "", false
	}
	return s, ok
}

// patternKeys are the keys that hold a regex, whose limits compilePattern
// checks.
var patternKeys = map[string]bool{"exe": true, "comm": true, "argv": true, "exclude_argv": true, "cgroup": true, "cwd": true}

func boolean(raw map[string]any, key string, fail func(string, error)) bool {
	b, ok := raw[key].(bool)
	if !ok {
		fail(key, wrongType("a boolean", raw[key]))
	}
	return b
}

func strs(raw map[string]any, key string, fail func(string, error)) []string {
	arr, ok := raw[key].([]any)
	if !ok {
		fail(key, wrongType("an array of strings", raw[key]))
		return nil
	}
	if len(arr) > MaxListItems {
		fail(key, fmt.Errorf("%w: the list has %d items; the limit is %d", errTooBig, len(arr), MaxListItems))
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			fail(key, wrongType("an array of strings", e))
			return nil
		}
		if len(s) > MaxValueBytes {
			fail(key, fmt.Errorf("%w: an item is %d bytes; the limit is %d", errTooBig, len(s), MaxValueBytes))
			return nil
		}
		out = append(out, s)
	}
	return out
}

func wrongType(want string, v any) error {
	got := "a value"
	switch v.(type) {
	case string:
		got = "a string"
	case bool:
		got = "a boolean"
	case int64:
		got = "an integer"
	case float64:
		got = "a float"
	case time.Time:
		got = "a datetime"
	case []any, []map[string]any:
		got = "an array"
	case map[string]any:
		got = "a table"
	}
	return fmt.Errorf("must be %s, not %s", want, got)
}

// problem is one broken invariant of a rule, by key ("" for the whole rule).
type problem struct {
	key string
	err error
}

// problems checks what a rule must satisfy however it was built.
func (r *Rule) problems() []problem {
	var out []problem
	add := func(key, format string, args ...any) {
		out = append(out, problem{key, fmt.Errorf(format, args...)})
	}
	if r.Name == "" {
		add("name", "required")
	}
	if r.Flag != "" && !isFlagName(r.Flag) {
		add("flag", "%q is not a flag like --id or -id", r.Flag)
	}
	if r.NamespaceFlag != "" && !isFlagName(r.NamespaceFlag) {
		add("namespace_flag", "%q is not a flag like --namespace or -namespace", r.NamespaceFlag)
	}
	if f := r.Supervisor.SocketFlag; f != "" && !isFlagName(f) {
		add("supervisor.socket_flag", "%q is not a flag like --address or -address", f)
	}
	if r.Supervisor.Ancestor != nil && r.Supervisor.SocketFlag != "" {
		add("supervisor", "set exactly one of ancestor or socket_flag")
	}
	if !r.IDTransform.Valid() {
		add("id_transform", "unknown transform %q (known: %q, %q)", string(r.IDTransform), UnderscoreToDash, SystemdUnescape)
	}
	captured := map[string]bool{"id": true}
	for _, re := range []*regexp.Regexp{r.Exe, r.Comm, r.Argv, r.Cgroup, r.Cwd} {
		if re != nil {
			for _, n := range re.SubexpNames() {
				captured[n] = captured[n] || n != ""
			}
		}
	}
	if r.NamespaceFlag != "" {
		captured["ns"] = true
	}
	for _, t := range r.Cleanup {
		if err := cleanupTemplateProblem(t, captured); err != nil {
			add("cleanup", "template %q: %v", t, err)
		}
	}
	for _, t := range r.Leftovers {
		if err := leftoverTemplateProblem(t, captured); err != nil {
			add("leftovers", "template %q: %v", t, err)
		}
	}
	for _, cmd := range []struct {
		key  string
		argv []string
	}{{"reconcile", r.Reconcile}, {"inspect", r.Inspect}} {
		key := cmd.key
		for i, t := range cmd.argv {
			names, err := placeholders(t)
			if err != nil {
				add(key, "argument %q: %v", t, err)
				continue
			}
			if i == 0 && (t == "" || len(names) > 0) {
				add(key, "the command %q must be a fixed program name", t)
			}
			for _, n := range names {
				if !captured[n] {
					add(key, "argument %q uses {%s}, which no matcher captures", t, n)
				}
			}
		}
	}
	if r.Flag == "" && !hasGroup(r.Exe, "id") && !hasGroup(r.Comm, "id") && !hasGroup(r.Argv, "id") &&
		!hasGroup(r.Cgroup, "id") && !hasGroup(r.Cwd, "id") {
		add("", "no key yields an ID: add a (?P<id>...) group to exe, comm, argv, cgroup or cwd, or set flag")
	}
	return out
}

func isFlagName(f string) bool {
	return strings.HasPrefix(f, "-") && len(strings.TrimLeft(f, "-")) > 0 && !strings.ContainsAny(f, " =")
}

// Validate reports whatever makes a rule built in code unusable, one
// problem per line.
func (r *Rule) Validate() error {
	var errs []error
	for _, p := range r.problems() {
		errs = append(errs, &RuleError{Rule: fmt.Sprintf("rule %q", r.Name), Key: p.key, Err: p.err})
	}
	return errors.Join(errs...)
}
