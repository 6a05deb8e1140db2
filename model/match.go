package model

import (
	"regexp"
	"strings"

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
	// A cgroup named like a systemd unit (foo.service, a slice) is
	// systemd's, never a sandbox's ID or a runtime's namespace, whatever
	// shape of path a rule takes it from (containerd's /<ns>/<id> is any
	// two-level path: /system.slice/foo.service).
	if c.by == ByCgroup && IsSystemdUnit(c.id) || r.Cgroup != nil && IsSystemdUnit(c.vars["ns"]) {
		return Match{}, false
	}
	c.add(ByCwd, r.Cwd, cwd)
	id := boundID(r.IDTransform.Apply(c.id))
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
		}
	}
	if ns != "" {
		ns = boundID(ns)
		c.vars["ns"] = ns
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
