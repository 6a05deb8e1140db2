package model

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sandtop/sandtop/proc"
)

// The matcher names reported in Match.By, in the order in which they are
// asked for the ID.
const (
	ByExe    = "exe"
	ByComm   = "comm"
	ByArgv   = "argv"
	ByFlag   = "flag"
	ByCgroup = "cgroup"
	ByCwd    = "cwd"
)

// IDTransform rewrites a captured ID into the spelling its runtime uses.
type IDTransform string

// The ID transforms a rule may name.
const (
	IDTransformNone IDTransform = ""
	// UnderscoreToDash undoes the kubelet's systemd cgroup driver, which
	// writes a pod UID's "-" as "_" because "-" separates slice levels in
	// systemd unit names (kubepods-burstable-pod1234_abcd.slice).
	UnderscoreToDash IDTransform = "underscore-to-dash"
	// SystemdUnescape decodes systemd's unit-name escaping ("\x2d" is "-"),
	// as in machine-fedora\x2d38.scope (systemd.unit(5), "String Escaping").
	SystemdUnescape IDTransform = "systemd-unescape"
)

// Valid reports whether t is a transform Apply knows.
func (t IDTransform) Valid() bool {
	return t == IDTransformNone || t == UnderscoreToDash || t == SystemdUnescape
}

// Apply returns s rewritten by the transform.
func (t IDTransform) Apply(s string) string {
	switch t {
	case UnderscoreToDash:
		return strings.ReplaceAll(s, "_", "-")
	case SystemdUnescape:
		return systemdUnescape(s)
	}
	return s
}

// systemdUnescape turns every "\xNN" into the byte it names and leaves
// anything else, including a malformed escape, as it is.
func systemdUnescape(s string) string {
	i := strings.Index(s, `\x`)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		if n, err := strconv.ParseUint(s[i+2:min(i+4, len(s))], 16, 8); err == nil && i+4 <= len(s) {
			b.WriteByte(byte(n))
			s = s[i+4:]
		} else {
			b.WriteString(`\x`)
			s = s[i+2:]
		}
		i = strings.Index(s, `\x`)
	}
	b.WriteString(s)
	return b.String()
}

// FlagValue returns the value of flag in argv[1:], written either as its own
// token followed by the value ("-id X") or joined with "=" ("-id=X"); the
// flag must be a whole token. A one-dash flag ("-id") also matches its
// two-dash spelling ("--id"), because Go's flag package, which containerd
// shims parse their arguments with, accepts both. Scanning stops at "--",
// which ends the options. ok is false when the flag is absent or is the
// last token; "-id=" yields "" with ok true.
func FlagValue(argv []string, flag string) (value string, ok bool) {
	if flag == "" {
		return "", false
	}
	long := ""
	if strings.HasPrefix(flag, "-") && !strings.HasPrefix(flag, "--") {
		long = "-" + flag
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			break
		}
		name, val, joined := strings.Cut(a, "=")
		if name != flag && (long == "" || name != long) {
			continue
		}
		if joined {
			return val, true
		}
		if i+1 < len(argv) {
			return argv[i+1], true
		}
		return "", false
	}
	return "", false
}

// deletedSuffix is what the kernel appends to the /proc/PID/exe and
// /proc/PID/cwd link targets once the file or directory has been unlinked
// (proc(5)); the path before it is still the one the process was using.
const deletedSuffix = " (deleted)"

// subject is one process as the matchers see it. argv joined by spaces is
// built at most once per process, and only when a rule gets as far as
// needing it: most processes fail a cheaper matcher first.
type subject struct {
	p      *proc.Process
	argv   string
	joined bool
}

func (s *subject) joinedArgv() string {
	if !s.joined {
		s.argv, s.joined = strings.Join(s.p.Argv, " "), true
	}
	return s.argv
}

// cgroup is the v2 path, or the v1 freezer path on hosts where the process
// sits only at the root of the v2 hierarchy (or has none).
func (s *subject) cgroup() string {
	if c := s.p.Cgroup; c != "" && c != "/" {
		return c
	}
	return s.p.Freezer
}

// matchString reports whether re matches in. An empty input is an unknown
// field (unreadable, a zombie's argv, a kernel thread's exe), and an unknown
// field never satisfies a matcher.
func matchString(re *regexp.Regexp, in string) bool {
	return in != "" && mayMatch(re, in) && re.MatchString(in)
}

// excludes reports whether an exclude_argv matcher matches in. Unlike a
// matcher, it may match an empty argv; the literal test comes first all
// the same, because most exclusions (containerd's "start" and "delete"
// shim helpers) are unanchored on the left, which makes the regexp try
// every position of a long shim command line.
func excludes(re *regexp.Regexp, in string) bool {
	return re != nil && mayMatch(re, in) && re.MatchString(in)
}

// literalCache maps each regexp to the literals one of which any string it
// matches must contain (nil: no such literals). A Go regexp costs about a
// microsecond on even a short input that it rejects, while almost every
// process fails every rule, so a strings.Contains first makes a scan of
// thousands of processes an order of magnitude cheaper. Entries are never
// evicted: there is one per regexp compiled, and rules are compiled once per
// load of the rules file.
var literalCache sync.Map // *regexp.Regexp -> []string

func mayMatch(re *regexp.Regexp, in string) bool {
	v, ok := literalCache.Load(re)
	if !ok {
		v, _ = literalCache.LoadOrStore(re, requiredLiterals(re.String()))
	}
	lits := v.([]string)
	if lits == nil {
		return true
	}
	for _, l := range lits {
		if strings.Contains(in, l) {
			return true
		}
	}
	return false
}

// requiredLiterals returns literals one of which every match of expr
// contains, or nil when it cannot name any.
func requiredLiterals(expr string) []string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	return literalsOf(re.Simplify()).required()
}

// The literal sets are kept small: a prefilter of more strings than this
// costs about what the regexp does.
const (
	maxExact    = 16
	maxRequired = 8
)

// literals is what a regexp node says about the strings it matches.
// exact, when known, holds every string the node can match (a superset:
// an assertion such as ^ counts as matching ""); req, when not nil,
// holds strings one of which every match contains.
type literals struct {
	exact, req []string
	known      bool // exact is known
}

// required is the best set to filter on: the exact strings when none is
// empty, else req.
func (l literals) required() []string {
	if l.known && len(l.exact) > 0 && !slices.Contains(l.exact, "") {
		if best := minimal(l.exact); len(best) <= maxRequired {
			return best
		}
	}
	return l.req
}

func literalsOf(re *syntax.Regexp) literals {
	switch re.Op {
	case syntax.OpLiteral:
		lit := string(re.Rune)
		if re.Flags&syntax.FoldCase != 0 || strings.ContainsRune(lit, utf8.RuneError) {
			return literals{}
		}
		return literals{exact: []string{lit}, req: []string{lit}, known: true}
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return literals{exact: []string{""}, known: true}
	case syntax.OpCharClass:
		// A handful of runes ([ =], [._-]) is a handful of strings. A class
		// holding U+FFFD would match a byte of invalid UTF-8, which no
		// literal spells.
		var runes []string
		for k := 0; k < len(re.Rune); k += 2 {
			for r := re.Rune[k]; r <= re.Rune[k+1]; r++ {
				if len(runes) == 4 || r == utf8.RuneError {
					return literals{}
				}
				runes = append(runes, string(r))
			}
		}
		return literals{exact: runes, req: runes, known: len(runes) > 0}
	case syntax.OpCapture:
		return literalsOf(re.Sub[0])
	case syntax.OpQuest:
		sub := literalsOf(re.Sub[0])
		if !sub.known {
			return literals{}
		}
		return literals{exact: union(sub.exact, []string{""}), known: true}
	case syntax.OpPlus:
		return literals{req: literalsOf(re.Sub[0]).required()}
	case syntax.OpRepeat:
		if re.Min >= 1 {
			sub := literalsOf(re.Sub[0])
			if re.Min == 1 && re.Max == 1 {
				return sub
			}
			return literals{req: sub.required()}
		}
	case syntax.OpConcat:
		return concatLiterals(re.Sub)
	case syntax.OpAlternate:
		// Every branch must require something, and any of it will do.
		out := literals{known: true}
		reqOK := true
		for _, sub := range re.Sub {
			l := literalsOf(sub)
			if l.known {
				out.exact = union(out.exact, l.exact)
			} else {
				out.known = false
			}
			if req := l.required(); req != nil && reqOK {
				out.req = union(out.req, req)
			} else {
				reqOK = false
			}
		}
		if out.req = minimal(out.req); !reqOK || len(out.req) > maxRequired {
			out.req = nil
		}
		if !out.known || len(out.exact) > maxExact {
			out.exact, out.known = nil, false
		}
		return out
	}
	return literals{}
}

// concatLiterals multiplies out the runs of parts whose strings are known
// (`--?namespace[= ]moby` is four strings), and offers as required the
// best of those runs and of the other parts' own requirements: the set
// whose shortest string is longest.
func concatLiterals(parts []*syntax.Regexp) literals {
	var best []string
	consider := func(set []string) {
		if len(set) == 0 || slices.Contains(set, "") {
			return
		}
		set = minimal(set)
		if len(set) > maxRequired {
			return
		}
		if best == nil || shortest(set) > shortest(best) || shortest(set) == shortest(best) && len(set) < len(best) {
			best = set
		}
	}
	run := []string{""}
	whole := true // run is every string the parts so far can match
	for _, part := range parts {
		l := literalsOf(part)
		if l.known && len(run)*len(l.exact) <= maxExact {
			run = product(run, l.exact)
			continue
		}
		consider(run)
		whole = false
		run = []string{""}
		if l.known {
			run = l.exact
		}
		consider(l.required())
	}
	consider(run)
	out := literals{req: best}
	if whole {
		out.exact, out.known = run, true
	}
	return out
}

func product(a, b []string) []string {
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			if s := x + y; !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// minimal drops every string that contains another of the set: an input
// that holds it holds the shorter one too.
func minimal(set []string) []string {
	var out []string
	for i, s := range set {
		redundant := false
		for j, t := range set {
			if i != j && strings.Contains(s, t) && (len(t) < len(s) || j < i) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, s)
		}
	}
	return out
}

func shortest(lits []string) int {
	n := len(lits[0])
	for _, l := range lits[1:] {
		n = min(n, len(l))
	}
	return n
}

// Match reports whether the rule claims p, and with which ID. Kernel threads
// never match.
func (r *Rule) Match(p *proc.Process) (Match, bool) {
	if p == nil || p.Kernel {
		return Match{}, false
	}
	s := subject{p: p}
	return r.match(&s)
}

// Match returns the match of the first rule that claims p.
func (rs Rules) Match(p *proc.Process) (Match, bool) {
	if p == nil || p.Kernel {
		return Match{}, false
	}
	s := subject{p: p}
	for _, r := range rs {
		if r == nil {
			continue
		}
		if m, ok := r.match(&s); ok {
			return m, true
		}
	}
	return Match{}, false
}

// Needs says which of p's unread fields (p.Unread) some rule could still
// depend on, so that a lazy scan (proc.Options.Need) reads exe, cwd and
// status only where they can change what Match returns. It evaluates the
// matchers cheapest first, and a rule that a cheap matcher (comm, flag,
// cgroup, argv) already rejects needs nothing. An exe matcher that argv[0]
// satisfies needs no exe; otherwise it needs the exe, and the rule's
// other dear matchers are asked about only once the exe is known (the scan
// asks again after each read): status for NestedPIDNamespace (NSpid),
// then the cwd. Kernel threads never match and need nothing.
//
// The guarantee, held by TestLazyMatchesFullReads: Build over a lazy scan
// gives the same view as over a full one.
func (rs Rules) Needs(p *proc.Process) proc.Fields {
	if p == nil || p.Kernel || p.Unread == 0 {
		return 0
	}
	s := subject{p: p}
	var need proc.Fields
	for _, r := range rs {
		if r != nil {
			need |= r.needs(&s)
		}
	}
	return need
}

// NeedsAlike returns Needs with a memo: each set of what Needs reads of a
// process (the fields rules match on, see alike, and which of them are
// unread) is answered once while it stays in the memo (see needsMemo).
// Most of a host's processes share theirs with others (a container's
// workers: the same argv in the same cgroup), and a lazy scan asks about
// each process once or twice: at 10,000 processes nine in ten questions
// were repeats. The function is safe for concurrent use, like Needs; give
// it to one scanner.
func (rs Rules) NeedsAlike() func(*proc.Process) proc.Fields {
	m := &needsMemo{}
	return func(p *proc.Process) proc.Fields { return m.needs(rs, p) }
}

func (r *Rule) needs(s *subject) proc.Fields {
	p := s.p
	if r.Exe == nil && r.Cwd == nil && !r.NestedPIDNamespace {
		return 0
	}
	if r.Comm != nil && !matchString(r.Comm, p.Comm) {
		return 0
	}
	if r.Flag != "" {
		if v, ok := FlagValue(p.Argv, r.Flag); !ok || v == "" {
			return 0
		}
	}
	if r.Cgroup != nil && !matchString(r.Cgroup, s.cgroup()) {
		return 0
	}
	if r.Argv != nil || r.ExcludeArgv != nil {
		argv := s.joinedArgv()
		if r.Argv != nil && !matchString(r.Argv, argv) || excludes(r.ExcludeArgv, argv) {
			return 0
		}
	}
	if r.Exe != nil && (len(p.Argv) == 0 || !matchString(r.Exe, p.Argv[0])) {
		if p.Unread&proc.FieldExe != 0 {
			return proc.FieldExe
		}
		if !matchString(r.Exe, strings.TrimSuffix(p.Exe, deletedSuffix)) {
			return 0
		}
	}
	if r.NestedPIDNamespace {
		if p.Unread&proc.FieldStatus != 0 {
			return proc.FieldStatus
		}
		if len(p.NSpid) < 2 {
			return 0
		}
	}
	if r.Cwd != nil {
		return p.Unread & proc.FieldCwd
	}
	return 0
}

// MatchCgroup returns the match of the first rule that recognises a
// sandbox by the cgroup path alone (a rule with only a cgroup matcher), as
// if a process lived there: what finds a runtime's cgroup that no live
// process is in any more (a leftover). A rule with NestedPIDNamespace
// (containerd's /<ns>/<id>, which any two-level path resembles) still
// matches here, since an empty cgroup has no process to ask: its Match.Rule
// says so, and a caller acting on it alone needs other evidence (the
// runtime's state directory).
func (rs Rules) MatchCgroup(path string) (Match, bool) {
	if path == "" || path == "/" {
		return Match{}, false
	}
	s := subject{p: &proc.Process{Cgroup: path, NSpid: []int{0, 0}}}
	for _, r := range rs {
		if r == nil || !r.onlyCgroup() {
			continue
		}
		if m, ok := r.match(&s); ok {
			return m, true
		}
	}
	return Match{}, false
}

// match runs on every process of every scan, so it works in two passes. The
// first decides, cheapest matcher first, with MatchString, which allocates
// nothing; only a process that passes all of them pays for the submatch
// pass that collects the captures.
func (r *Rule) match(s *subject) (Match, bool) {
	p := s.p
	exeIn := ""
	if r.Exe != nil {
		switch exe := strings.TrimSuffix(p.Exe, deletedSuffix); {
		case len(p.Argv) > 0 && matchString(r.Exe, p.Argv[0]):
			exeIn = p.Argv[0]
		case matchString(r.Exe, exe):
			exeIn = exe
		default:
			return Match{}, false
		}
	}
	if r.Comm != nil && !matchString(r.Comm, p.Comm) {
		return Match{}, false
	}
	if r.NestedPIDNamespace && len(p.NSpid) < 2 {
		return Match{}, false
	}
	flagVal := ""
	if r.Flag != "" {
		v, ok := FlagValue(p.Argv, r.Flag)
		if !ok || v == "" {
			return Match{}, false
		}
		flagVal = v
	}
	cgroup := ""
	if r.Cgroup != nil {
		if cgroup = s.cgroup(); !matchString(r.Cgroup, cgroup) {
			return Match{}, false
		}
	}
	cwd := ""
	if r.Cwd != nil {
		if cwd = strings.TrimSuffix(p.Cwd, deletedSuffix); !matchString(r.Cwd, cwd) {
			return Match{}, false
		}
	}
	argv := ""
	if r.Argv != nil || r.ExcludeArgv != nil {
		argv = s.joinedArgv()
		if r.Argv != nil && !matchString(r.Argv, argv) {
			return Match{}, false
		}
		if excludes(r.ExcludeArgv, argv) {
			return Match{}, false
		}
	}

	c := captures{}
	c.add(ByExe, r.Exe, exeIn)
	c.add(ByComm, r.Comm, p.Comm)
	c.add(ByArgv, r.Argv, argv)
	if c.id == "" && flagVal != "" {
		c.id, c.by = flagVal, ByFlag
	}
	c.add(ByCgroup, r.Cgroup, cgroup)
	c.add(ByCwd, r.Cwd, cwd)
	id := r.IDTransform.Apply(c.id)
	if id == "" {
		return Match{}, false
	}
	if c.vars == nil {
		c.vars = make(map[string]string, 1)
	}
	c.vars["id"] = id
	ns := c.vars["ns"]
	if ns == "" && r.NamespaceFlag != "" {
		if v, ok := FlagValue(p.Argv, r.NamespaceFlag); ok && v != "" {
			ns = v
			c.vars["ns"] = v
		}
	}
	return Match{Rule: r, ID: id, Namespace: ns, By: c.by, Vars: c.vars}, true
}

// captures gathers the named groups of the matchers, asked in ID order: the
// first non-empty "id" is the ID, and for any other name the first matcher
// whose group took part in the match wins.
type captures struct {
	id, by string
	vars   map[string]string
}

func (c *captures) add(by string, re *regexp.Regexp, in string) {
	if re == nil || in == "" || !hasNamedGroup(re) {
		return
	}
	loc := re.FindStringSubmatchIndex(in)
	for i, name := range re.SubexpNames() {
		if name == "" || loc == nil || loc[2*i] < 0 {
			continue // unnamed, or a group in an alternative that did not match
		}
		v := in[loc[2*i]:loc[2*i+1]]
		if name == "id" {
			if c.id == "" && v != "" {
				c.id, c.by = v, by
			}
			continue
		}
		if c.vars == nil {
			c.vars = make(map[string]string, 4)
		}
		if _, seen := c.vars[name]; !seen {
			c.vars[name] = v
		}
	}
}

func hasNamedGroup(re *regexp.Regexp) bool {
	for _, n := range re.SubexpNames() {
		if n != "" {
			return true
		}
	}
	return false
}

// hasGroup reports whether re has a capture group called name.
func hasGroup(re *regexp.Regexp, name string) bool {
	return re != nil && re.SubexpIndex(name) >= 0
}

// Expand substitutes every "{name}" in template with Vars[name]. A
// placeholder with no value is left as it is, so a half-expanded path stays
// recognisable; use CleanupPaths to get only paths safe to remove.
func (m Match) Expand(template string) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(template, '{')
		if open < 0 {
			break
		}
		end := strings.IndexByte(template[open:], '}')
		if end < 0 {
			break
		}
		name := template[open+1 : open+end]
		b.WriteString(template[:open])
		if v, ok := m.Vars[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(template[open : open+end+1])
		}
		template = template[open+end+1:]
	}
	b.WriteString(template)
	return b.String()
}

// CleanupPaths expands the rule's cleanup templates into the paths that are
// safe to remove. A path is refused, and named in the returned error, when a
// placeholder has no value or an empty one, when the ID is "." or ".." or
// holds a "/", or when the result is not an absolute, clean path other than
// "/" (no "..", "." or "//" parts): the values come from argv and cwd, which
// the sandboxed side may control, and must never steer a removal outside
// the runtime's own directories.
func (m Match) CleanupPaths() ([]string, error) {
	if m.Rule == nil {
		return nil, nil
	}
	var (
		paths []string
		errs  []error
	)
	for _, t := range m.Rule.Cleanup {
		if err := m.checkCleanupVars(t); err != nil {
			errs = append(errs, fmt.Errorf("cleanup %q: %w", t, err))
			continue
		}
		p := m.Expand(t)
		if !SafeCleanupPath(p, m.ID) {
			errs = append(errs, fmt.Errorf("cleanup %q: %w: %q is not an absolute, clean path naming the sandbox ID", t, ErrUnsafeCleanup, p))
			continue
		}
		paths = append(paths, p)
	}
	return paths, errors.Join(errs...)
}

// ReconcileArgv expands the rule's reconcile command with the captures. It
// fails when a placeholder has no value: a command with a hole in it is
// never run.
func (m Match) ReconcileArgv() ([]string, error) {
	if m.Rule == nil || len(m.Rule.Reconcile) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(m.Rule.Reconcile))
	for _, t := range m.Rule.Reconcile {
		if err := m.checkVars(t); err != nil {
			return nil, fmt.Errorf("reconcile %q: %w", t, err)
		}
		out = append(out, m.Expand(t))
	}
	return out, nil
}

// checkCleanupVars checks each value a cleanup template takes against its
// place in the path (cleanupValueProblem).
func (m Match) checkCleanupVars(template string) error {
	if _, err := placeholders(template); err != nil {
		return err
	}
	for i, part := range strings.Split(template, "/") {
		if n := placeholderName(part); n != "" {
			if err := cleanupValueProblem(n, m.Vars[n], i == 0); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m Match) checkVars(template string) error {
	names, err := placeholders(template)
	if err != nil {
		return err
	}
	for _, n := range names {
		v, ok := m.Vars[n]
		switch {
		case !ok || v == "":
			return fmt.Errorf("{%s} has no value", n)
		case n == "id" && (v == "." || v == ".." || strings.Contains(v, "/")):
			return fmt.Errorf("ID %q cannot name a directory", v)
		}
	}
	return nil
}

// placeholders lists the names of the "{name}" placeholders in template,
// rejecting unbalanced braces and names that no regex group could have.
func placeholders(template string) ([]string, error) {
	var names []string
	for rest := template; rest != ""; {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			break
		}
		if rest[open] == '}' {
			return nil, errors.New(`"}" without "{"`)
		}
		end := strings.IndexAny(rest[open+1:], "{}")
		if end < 0 || rest[open+1+end] == '{' {
			return nil, errors.New(`"{" without "}"`)
		}
		name := rest[open+1 : open+1+end]
		if !groupName.MatchString(name) {
			return nil, fmt.Errorf("{%s} is not a capture group name", name)
		}
		names = append(names, name)
		rest = rest[open+1+end+1:]
	}
	return names, nil
}

// groupName is what RE2 accepts as a capture group name.
var groupName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
