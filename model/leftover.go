package model

import (
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandtop/sandtop/proc"
)

// A sandbox can be dead and still hold resources: the directories its
// runtime made for it (vm0's {base}/workspaces/{id} and /run/vm0/sock/{id}
// after its Firecracker was SIGKILLed by hand), an empty boxlite/<id>
// cgroup. The rules already say where a sandbox's things live; read the
// other way round, a path that fits a rule's cleanup or leftovers template,
// or a cgroup a rule's cgroup matcher recognises, whose ID has no live
// process, is a leftover of that sandbox. Finding them is split in three:
// Leftovers.Globs (pure) says where to look, proc lists what is there, and
// Leftovers.Apply (pure) decides what is a leftover.

// Leftover is one thing a sandbox with no process left still holds.
type Leftover struct {
	Kind proc.PathKind
	// Path is a filesystem path, or for a cgroup its path as
	// /proc/PID/cgroup writes it.
	Path string
	// Dir is a cgroup's directory in the cgroupfs ("" for a path).
	Dir string
	// V1 marks a v1 cgroup.
	V1 bool
	// Hierarchy names a cgroup's hierarchy when a cgroup template found it
	// in each ("" for the one hierarchy the cgroup matchers walk).
	Hierarchy string
	// Name is a netns's or a link's name; Ino a netns's inode (0 for a
	// name with no namespace bound on it).
	Name string
	Ino  uint64
	// Netns is the named network namespace a link lives in ("" for the
	// host's); Index and LinkType are its ifindex and netlink type.
	Netns    string
	Index    int
	LinkType string
	// MntNS is a mount's namespace, NSPID a process in it whose
	// mountinfo showed it (0 for sandtop's own namespace), FSType its
	// file system.
	MntNS  uint64
	NSPID  int
	FSType string
	// Holders are the processes that use it: in a netns, holding a tap
	// open, with a working or root directory in a mount.
	Holders []int
	ModTime time.Time
	// Why says which rule and template (or matcher) make it the sandbox's.
	Why string
	// Keep, when not "", says why it must be reported and not removed.
	Keep string
}

// Age is how long the leftover has been unchanged at now.
func (l Leftover) Age(now time.Time) time.Duration {
	if l.ModTime.IsZero() || now.Before(l.ModTime) {
		return 0
	}
	return now.Sub(l.ModTime)
}

// Removable reports whether teardown may remove it.
func (l Leftover) Removable() bool { return l.Keep == "" }

// Glob is one place to look for leftovers.
type Glob struct {
	// Kind is the template's kind ("" for a bare path: a file, directory
	// or socket).
	Kind proc.PathKind
	// Pattern is in filepath.Match syntax: the template with {id} as "*"
	// and every other placeholder filled in; for a netns or link, a name.
	Pattern string
	Rule    *Rule
	// Template is the rule's template the pattern was made from.
	Template string
	// idAt is the index of the ID among the pattern's "/"-separated parts;
	// prefix and suffix are a name's literal parts around it.
	idAt           int
	prefix, suffix string
	vars           map[string]string
}

// IsPath reports whether g's pattern is a filesystem path that proc.Glob
// lists (not a name, mount point or cgroup).
func (g Glob) IsPath() bool {
	switch g.Kind {
	case "", proc.KindFile, proc.KindDir, proc.KindSocket:
		return true
	}
	return false
}

// Accepts reports whether an entry of kind k may be g's: a bare path's
// glob takes a file, directory or socket, any other only its own kind.
func (g Glob) Accepts(k proc.PathKind) bool {
	if g.Kind == "" {
		return k == proc.KindFile || k == proc.KindDir || k == proc.KindSocket
	}
	return g.Kind == k
}

// MatchName reports whether a netns or link name fits g, and its ID.
func (g Glob) MatchName(name string) (string, bool) {
	id := nameID(g.prefix, g.suffix, name)
	return id, id != "" && !strings.Contains(id, "/")
}

// Leftovers finds the leftovers of dead sandboxes. It remembers the
// captures of every sandbox it has seen alive ("base" of a vm0 VM), so a
// long-running caller (the live screen, the reaper) still knows where to
// look after the last VM of a runtime died; it does no I/O.
type Leftovers struct {
	rules Rules
	// recorded holds, per rule, each distinct set of captures (without the
	// ID) seen in a live sandbox, keyed by its canonical string.
	recorded map[*Rule]map[string]map[string]string
	// sockets holds, per rule, the supervisor sockets of its live
	// sandboxes: whether something still listens there says whether the
	// runtime is alive once its last sandbox is gone.
	sockets map[*Rule]map[string]bool
	// alive holds the Key of every sandbox seen with a process: a cgroup
	// whose shape alone is weak evidence (containerd's /<ns>/<id>, which
	// any two-level path resembles) is a leftover only of one of these.
	alive map[string]bool
	// namespaces holds the namespace of each runtime and ID seen alive
	// with one: a leftover found by a path or a cgroup that does not say it
	// (Docker's /docker/<id> of a container in containerd's moby) keeps
	// the namespace its sandbox had.
	namespaces map[runtimeID]string
	// daemonSnap and daemons are the runtimes served by a daemon alive in
	// daemonSnap (see runtimeRemoves).
	daemonSnap *proc.Snapshot
	daemons    map[string]bool
	daemonExes daemonExes
	// cgroups remembers what the cgroup rules say of each path asked about:
	// a refresh loop asks about the same cgroups every time, and each
	// answer costs a regexp match per cgroup rule.
	cgroups map[string]cgroupAnswer
	// lastRecorded holds the sandboxes the last Record met, by position
	// (see Record); spareRecorded is the other buffer.
	lastRecorded, spareRecorded []*Sandbox
	// keyBuf and keysBuf are Record's scratch space.
	keyBuf  []byte
	keysBuf []string
	// shown holds the leftover sandboxes of the last Apply, by key.
	shown map[string]*Sandbox
	// supMemo holds supervisorAlive's answers for the snapshot supSnap.
	supSnap *proc.Snapshot
	supMemo map[*Rule]supervisorAnswer
	// baseMemo holds baseOwnerAlive's answers for supSnap.
	baseMemo map[ruleBase]supervisorAnswer
}

type cgroupAnswer struct {
	m  Match
	ok bool
}

// maxCgroupAnswers bounds Leftovers.cgroups; past it, the memory starts
// over.
const maxCgroupAnswers = 1 << 16

// NewLeftovers returns a finder for rules.
func NewLeftovers(rules Rules) *Leftovers {
	return &Leftovers{rules: rules, recorded: map[*Rule]map[string]map[string]string{}, sockets: map[*Rule]map[string]bool{}, alive: map[string]bool{}, namespaces: map[runtimeID]string{}}
}

// Record remembers the captures and supervisor sockets of v's sandboxes.
// The live screen records every view it shows, and almost every sandbox
// in one is the very *Sandbox the last view held at the same position
// (the Builder shares those none of whose members changed): what Record
// learns of a sandbox only grows and a Sandbox is never written, so
// such a sandbox taught it everything already. The namespace of its
// runtime and ID is set again all the same: the last sandbox with that
// runtime and ID decides it.
func (f *Leftovers) Record(v *View) {
	last := f.lastRecorded
	next := grown(f.spareRecorded, len(v.Sandboxes))
	for i, sb := range v.Sandboxes {
		if len(sb.Members) == 0 {
			continue
		}
		if sb.Namespace != "" {
			f.namespaces[runtimeID{sb.Runtime, sb.ID}] = sb.Namespace
		}
		next[i] = sb
		if i < len(last) && last[i] == sb {
			continue
		}
		f.alive[sb.Key()] = true
		f.record(sb, sb.Rule)
		for _, r := range sb.rules {
			f.record(sb, r)
		}
	}
	clear(last)
	f.lastRecorded, f.spareRecorded = next, last
}

// record remembers sb's captures and socket for rule r.
func (f *Leftovers) record(sb *Sandbox, r *Rule) {
	if r == nil {
		return
	}
	if sb.socket != "" && r.Supervisor.SocketFlag != "" && !f.sockets[r][sb.socket] {
		if f.sockets[r] == nil {
			f.sockets[r] = map[string]bool{}
		}
		f.sockets[r][sb.socket] = true
		f.supSnap = nil // a new socket may answer for the supervisor
	}
	f.keyBuf = appendVarsKey(f.keyBuf[:0], &f.keysBuf, sb.Vars, recordedVar)
	if len(f.keyBuf) == 0 {
		return
	}
	if _, ok := f.recorded[r][string(f.keyBuf)]; ok {
		return
	}
	vars := map[string]string{}
	for k, v := range sb.Vars {
		if recordedVar(k, v) {
			vars[k] = v
		}
	}
	if f.recorded[r] == nil {
		f.recorded[r] = map[string]map[string]string{}
	}
	f.recorded[r][string(f.keyBuf)] = vars
}

// recordedVar says which captures Record keeps: all but the ID and those
// that captured nothing.
func recordedVar(k, v string) bool { return k != "id" && v != "" }

// appendVarsKey appends the canonical string of the captures of vars that
// keep accepts (all of them when keep is nil) to b: each name=value and a
// NUL, sorted by name; nothing when none is accepted. keys is scratch
// space.
func appendVarsKey(b []byte, keys *[]string, vars map[string]string, keep func(k, v string) bool) []byte {
	*keys = (*keys)[:0]
	for k, v := range vars {
		if keep == nil || keep(k, v) {
			*keys = append(*keys, k)
		}
	}
	slices.Sort(*keys)
	for _, k := range *keys {
		b = append(append(append(append(b, k...), '='), vars[k]...), 0)
	}
	return b
}

// varsKey is the canonical string of all of vars (see appendVarsKey).
func varsKey(vars map[string]string) string {
	var keys []string
	return string(appendVarsKey(nil, &keys, vars, nil))
}

// Globs records v (see Record) and returns where to look for leftovers:
// each rule's cleanup and leftovers templates with {id} as the wildcard.
// A template's other placeholders are filled only from the captures of a
// sandbox seen alive; a template that cannot be filled, that holds {id}
// other than as one whole path component, or whose first component would
// be the wildcard is skipped: sandtop never globs "/".
func (f *Leftovers) Globs(v *View) []Glob {
	if v != nil {
		f.Record(v)
	}
	var out []Glob
	seen := map[string]bool{}
	for _, r := range f.rules {
		if r == nil {
			continue
		}
		for _, t := range slices.Concat(r.Cleanup, r.Leftovers) {
			for _, g := range f.globsOf(r, t) {
				if k := string(g.Kind) + ":" + g.Pattern; !seen[k] {
					seen[k] = true
					out = append(out, g)
				}
			}
		}
	}
	return out
}

func (f *Leftovers) globsOf(r *Rule, template string) []Glob {
	kind, body := SplitLeftoverTemplate(template)
	if slices.Contains(r.Cleanup, template) {
		kind, body = "", template // a cleanup path is never kind-prefixed
	}
	if isNameKind(kind) {
		if nameTemplateProblem(kind, body, []string{"id"}) != nil || strings.Count(body, "{") != 1 {
			return nil
		}
		prefix, suffix, _ := strings.Cut(body, "{id}")
		return []Glob{{Kind: kind, Pattern: globEscape(prefix) + "*" + globEscape(suffix), Rule: r, Template: template, prefix: prefix, suffix: suffix}}
	}
	gs := f.pathGlobs(r, template, body)
	for i := range gs {
		gs[i].Kind = kind
	}
	return gs
}

// pathGlobs are the globs of a path template (body, without its kind).
func (f *Leftovers) pathGlobs(r *Rule, template, body string) []Glob {
	names, err := placeholders(body)
	if err != nil || !slices.Contains(names, "id") {
		return nil
	}
	if !slices.Contains(strings.Split(body, "/"), "{id}") || strings.Count(body, "{id}") != 1 {
		return nil
	}
	others := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "id" })
	var sets []map[string]string
	if len(others) == 0 {
		sets = []map[string]string{{}}
	} else {
		for _, key := range sortedKeys(f.recorded[r]) {
			sets = append(sets, f.recorded[r][key])
		}
	}
	var out []Glob
	for _, vars := range sets {
		pat, ok := fillGlob(body, vars)
		if !ok {
			continue
		}
		// Values are escaped, so the one bare "*" part is the ID. The
		// parts before it must be literal and at least one deep: "/{id}"
		// would list the root directory.
		parts := strings.Split(pat, "/")
		idAt := slices.Index(parts, "*")
		if idAt < 2 || strings.ContainsAny(strings.Join(parts[:idAt], "/"), "*?[") {
			continue
		}
		out = append(out, Glob{Pattern: pat, Rule: r, Template: template, idAt: idAt, vars: vars})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fillGlob expands template with vars and {id} as "*", escaping glob
// metacharacters in the values; ok is false when a value is missing or
// the result is not an absolute, clean path.
func fillGlob(template string, vars map[string]string) (string, bool) {
	esc := map[string]string{"id": "*"}
	for k, v := range vars {
		if k == "id" || v == "" {
			continue
		}
		esc[k] = globEscape(v)
	}
	p := Match{Vars: esc}.Expand(template)
	if strings.ContainsAny(p, "{}") || !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
		return "", false
	}
	return p, true
}

func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// CgroupRules are the rules that can recognise a cgroup with no process in
// it: a cgroup matcher and no matcher that needs a process (exe, comm,
// argv, flag, cwd).
func (f *Leftovers) CgroupRules() Rules {
	var out Rules
	for _, r := range f.rules {
		if r != nil && r.onlyCgroup() && hasGroup(r.Cgroup, "id") {
			out = append(out, r)
		}
	}
	return out
}

// WantCgroup reports whether a cgroup path is one a cgroup rule
// recognises: proc.ListCgroups reads the state of those only.
func (f *Leftovers) WantCgroup(path string) bool {
	_, ok := f.cgroupMatch(path)
	return ok
}

// WantCgroupAhead is WantCgroup asked before the view is known, by a walk
// made beside Build: want is what WantCgroup answers once a view holds
// the sandbox, and sure says no view can change that (the rule does not
// ask for a sandbox seen alive). It reads only the rules, never what
// Record writes, so it may run beside Record and WantCgroup.
func (f *Leftovers) WantCgroupAhead(path string) (want, sure bool) {
	m, ok := f.cgroupOfRule(path)
	if !ok {
		return false, true
	}
	return true, !m.Rule.NestedPIDNamespace
}

// cgroupOfRule is Rules.MatchCgroup, keeping only matches that name the
// cgroup itself, not one below it.
func (f *Leftovers) cgroupOfRule(path string) (Match, bool) {
	m, ok := f.rules.MatchCgroup(path)
	return m, ok && cgroupNamesID(m.Rule, path)
}

// cgroupMatch is Rules.MatchCgroup, keeping only matches that name the
// cgroup itself (not one below it) and, for a rule whose cgroup shape
// alone is weak evidence, a sandbox seen alive.
func (f *Leftovers) cgroupMatch(path string) (Match, bool) {
	a, known := f.cgroups[path]
	if !known {
		a.m, a.ok = f.cgroupOfRule(path)
		if f.cgroups == nil || len(f.cgroups) >= maxCgroupAnswers {
			f.cgroups = map[string]cgroupAnswer{}
		}
		f.cgroups[path] = a
	}
	m, ok := a.m, a.ok
	if !ok {
		return Match{}, false
	}
	if m.Rule.NestedPIDNamespace && !f.alive[keyOf(m)] {
		return Match{}, false
	}
	return m, true
}

// cgroupNamesID reports whether r's cgroup matcher captures the ID in the
// last component of path.
// A matcher may have an "id" group in each of its alternatives (Docker's
// systemd and cgroupfs shapes): the one that took part counts.
func cgroupNamesID(r *Rule, path string) bool {
	loc := r.Cgroup.FindStringSubmatchIndex(path)
	if loc == nil {
		return false
	}
	for i, name := range r.Cgroup.SubexpNames() {
		if name == "id" && loc[2*i] >= 0 {
			return !strings.Contains(path[loc[2*i+1]:], "/")
		}
	}
	return false
}

// Found is what proc found where Globs and WantCgroup said to look.
type Found struct {
	Globs   []Glob
	Paths   []proc.PathEntry
	Cgroups []proc.CgroupDir
	// CgroupPaths are the cgroups the cgroup templates' globs found, in
	// every hierarchy.
	CgroupPaths []proc.CgroupDir
	Netns       []proc.NetnsEntry
	Links       []proc.LinkEntry
	Mounts      []proc.MountEntry
	// NS says which namespaces are the host's own.
	NS proc.Namespaces
	// Listeners are the listening unix socket paths of every network
	// namespace; nil when they could not be read (no socket is then
	// removable).
	Listeners map[string]bool
}

// systemdUnitSuffixes name the unit types whose cgroups systemd owns
// (systemd.unit(5)): their directories are systemd's to remove.
var systemdUnitSuffixes = []string{".scope", ".slice", ".service", ".socket", ".mount", ".swap", ".target"}

// IsSystemdUnit reports whether the last component of a cgroup path names
// a systemd unit.
func IsSystemdUnit(cgroupPath string) bool {
	base := cgroupPath[strings.LastIndexByte(cgroupPath, '/')+1:]
	for _, s := range systemdUnitSuffixes {
		if strings.HasSuffix(base, s) {
			return true
		}
	}
	return false
}

// Apply returns v with a sandbox for every ID that has leftovers and no
// live process: badge leftover, no members, its runtime the rule's name.
// v itself is returned when there are none. The new view shares v's
// sandboxes; the leftover ones follow them, sorted by ID.
func (f *Leftovers) Apply(v *View, found Found) *View {
	if len(found.Paths) == 0 && len(found.Cgroups) == 0 && len(found.CgroupPaths) == 0 &&
		len(found.Netns) == 0 && len(found.Links) == 0 && len(found.Mounts) == 0 {
		return v
	}
	// What was found is gathered first, then judged against the live
	// sandboxes of the IDs it names only (an index of every sandbox was
	// most of what a refresh allocated here, for a handful of entries).
	type entry struct {
		id, ns, by string
		r          *Rule
		vars       map[string]string
		l          Leftover
	}
	var entries []entry
	add := func(id, ns string, r *Rule, by string, vars map[string]string, l Leftover) {
		entries = append(entries, entry{id: id, ns: ns, by: by, r: r, vars: vars, l: l})
	}
	// pathID finds the glob of kind k whose pattern p fits, and the ID it
	// names.
	pathID := func(p string, accepts func(Glob) bool) (Glob, string, bool) {
		for _, g := range found.Globs {
			if g.idAt == 0 || !accepts(g) {
				continue
			}
			if ok, _ := filepath.Match(g.Pattern, p); !ok {
				continue
			}
			if id := strings.Split(p, "/")[g.idAt]; SafeCleanupPath(p, id) {
				return g, id, true
			}
		}
		return Glob{}, "", false
	}
	// dirs holds the directories found, by path, so that a mount below one
	// is that sandbox's too: its removal must come first.
	type dirOf struct {
		g  Glob
		id string
	}
	dirs := map[string]dirOf{}
	for _, e := range found.Paths {
		g, id, ok := pathID(e.Path, func(g Glob) bool { return g.IsPath() && g.Accepts(e.Kind) })
		if !ok {
			continue
		}
		l := Leftover{Kind: e.Kind, Path: e.Path, ModTime: e.ModTime, Why: fits(g)}
		if e.Kind == proc.KindSocket {
			switch {
			case found.Listeners == nil:
				l.Keep = "unix sockets unreadable: cannot tell whether something listens on it"
			case found.Listeners[e.Path]:
				l.Keep = "something listens on it"
			}
		}
		if e.Kind == proc.KindDir {
			dirs[e.Path] = dirOf{g, id}
		}
		add(id, "", g.Rule, "path", g.vars, l)
	}
	for _, m := range found.Mounts {
		g, id, ok := pathID(m.Point, func(g Glob) bool { return g.Kind == proc.KindMount })
		why := fits(g)
		if !ok {
			for d := m.Point; d != "/" && d != "."; d = filepath.Dir(d) {
				if o, isDir := dirs[d]; isDir {
					g, id, ok, why = o.g, o.id, true, "mounted at or below "+d+", which "+fits(o.g)
					break
				}
			}
		}
		if !ok {
			continue
		}
		l := Leftover{Kind: proc.KindMount, Path: m.Point, MntNS: m.MntNS, NSPID: m.PID, FSType: m.FSType, Holders: m.Users, Why: why}
		if m.PID != 0 {
			l.Why += "; in the mount namespace of pid " + strconv.Itoa(m.PID)
		}
		if len(m.Users) > 0 {
			l.Keep = "in use: " + PIDList(m.Users) + " works in it"
		}
		add(id, "", g.Rule, "path", g.vars, l)
	}
	for _, n := range found.Netns {
		g, id, ok := nameGlob(found.Globs, proc.KindNetns, n.Name)
		// The host's own namespace, even named, is never proposed.
		if !ok || found.NS.Host(n.Ino) {
			continue
		}
		l := Leftover{Kind: proc.KindNetns, Path: n.Path, Name: n.Name, Ino: n.Ino, ModTime: n.ModTime, Holders: n.Holders, Why: fits(g)}
		if len(n.Holders) > 0 {
			l.Keep = "in use: " + PIDList(n.Holders) + " in it"
		}
		add(id, "", g.Rule, "name", nil, l)
	}
	for _, k := range found.Links {
		g, id, ok := nameGlob(found.Globs, proc.KindLink, k.Name)
		// A physical device or the loopback (eth0, lo) is the host's,
		// whatever a template says: never proposed.
		if !ok || !slices.Contains(VirtualLinkTypes, k.Type) {
			continue
		}
		l := Leftover{Kind: proc.KindLink, Path: k.Name, Name: k.Name, Netns: k.Netns, Index: k.Index, LinkType: k.Type, Holders: k.Holders, Why: fits(g)}
		if len(k.Holders) > 0 {
			l.Keep = "in use: " + PIDList(k.Holders) + " holds it open"
		}
		add(id, "", g.Rule, "name", nil, l)
	}
	for _, c := range found.CgroupPaths {
		g, id, ok := pathID(c.Path, func(g Glob) bool { return g.Kind == proc.KindCgroup })
		if !ok || c.Populated {
			continue
		}
		add(id, "", g.Rule, ByCgroup, nil, Leftover{
			Kind: proc.KindCgroup, Path: c.Path, Dir: c.Dir, V1: c.V1, Hierarchy: c.Hierarchy, ModTime: c.ModTime, Why: "an empty cgroup that " + fits(g),
		})
	}
	for _, c := range found.Cgroups {
		m, ok := f.cgroupMatch(c.Path)
		if !ok || c.Populated || f.runtimeRemoves(m.Rule, v.Snapshot) {
			continue
		}
		add(m.ID, m.Namespace, m.Rule, ByCgroup, nil, Leftover{
			Kind: proc.KindCgroup, Path: c.Path, Dir: c.Dir, V1: c.V1, ModTime: c.ModTime,
			Why: "an empty cgroup the cgroup matcher of rule " + m.Rule.Name + " (" + m.Rule.Source + ") recognises, and no live process has the ID",
		})
	}
	if len(entries) == 0 {
		return v
	}
	// The live sandboxes by runtime and ID (and alias), of the IDs found.
	named := make(map[runtimeID]bool, len(entries))
	for _, e := range entries {
		named[runtimeID{e.r.Name, e.id}] = true
	}
	idx := make(map[runtimeID][]*Sandbox, len(entries))
	for _, sb := range v.Sandboxes {
		if len(sb.Members) == 0 {
			continue
		}
		if k := (runtimeID{sb.Runtime, sb.ID}); named[k] {
			idx[k] = append(idx[k], sb)
		}
		for _, id := range sb.Aliases {
			if k := (runtimeID{sb.Runtime, id}); named[k] {
				idx[k] = append(idx[k], sb)
			}
		}
	}
	byID := map[string]*Sandbox{}
	for _, e := range entries {
		id, ns, r, by, vars, l := e.id, e.ns, e.r, e.by, e.vars, e.l
		if ns == "" {
			ns = f.namespaces[runtimeID{r.Name, id}]
		}
		if id == "" || id == "." || id == ".." || strings.HasPrefix(id, ".") || liveIn(idx[runtimeID{r.Name, id}], ns) != nil {
			continue
		}
		m := Match{Rule: r, ID: id, Namespace: ns}
		key := keyOf(m)
		sb := byID[key]
		if sb == nil {
			sb = &Sandbox{ID: id, Namespace: ns, Runtime: r.Name, Rule: r, MatchedBy: by, Vars: map[string]string{"id": id}, key: key, name: nameInKey(key, m)}
			byID[key] = sb
		}
		for k, val := range vars {
			if _, ok := sb.Vars[k]; !ok {
				sb.Vars[k] = val
			}
		}
		if !slices.Contains(sb.rules, r) {
			sb.rules = append(sb.rules, r)
		}
		if !slices.ContainsFunc(sb.Leftovers, func(o Leftover) bool {
			return o.Path == l.Path && o.Kind == l.Kind && o.Dir == l.Dir && o.Netns == l.Netns && o.MntNS == l.MntNS
		}) {
			sb.Leftovers = append(sb.Leftovers, l)
		}
	}
	if len(byID) == 0 {
		return v
	}
	out := *v
	out.base = v
	if v.base != nil {
		out.base = v.base
	}
	out.Sandboxes = slices.Clone(v.Sandboxes)
	out.byID = make(map[string]int32, len(v.byID)+len(byID))
	for k, i := range v.byID {
		out.byID[k] = i
	}
	shown := make(map[string]*Sandbox, len(byID))
	for _, key := range sortedKeys(byID) {
		sb := byID[key]
		f.decideRemovable(sb, v)
		sb.idx = int32(len(out.Sandboxes))
		// The same leftovers, judged the same, as the last view showed:
		// that view's sandbox is handed out again. The live screen keeps
		// its last view while it builds the next, and at 10,000 processes
		// a second copy of hundreds of leftover sandboxes was a tenth of
		// its heap.
		if last := f.shown[key]; last != nil && sameLeftoverSandbox(last, sb) {
			sb = last
		}
		shown[key] = sb
		out.byID[key] = sb.idx
		out.Sandboxes = append(out.Sandboxes, sb)
	}
	f.shown = shown
	return &out
}

// sameLeftoverSandbox reports whether two sandboxes Apply made are alike
// in every field Apply and judge set.
func sameLeftoverSandbox(a, b *Sandbox) bool {
	return a.key == b.key && a.idx == b.idx && a.ID == b.ID && a.Namespace == b.Namespace &&
		a.Runtime == b.Runtime && a.Rule == b.Rule && a.MatchedBy == b.MatchedBy &&
		a.Dead == b.Dead && slices.Equal(a.Badges, b.Badges) &&
		a.Supervised == b.Supervised && a.SupervisorNote == b.SupervisorNote &&
		maps.Equal(a.Vars, b.Vars) && slices.Equal(a.rules, b.rules) &&
		slices.EqualFunc(a.Leftovers, b.Leftovers, sameLeftover)
}

// sameLeftover reports whether two leftovers are alike in every field.
func sameLeftover(x, y Leftover) bool {
	return x.Kind == y.Kind && x.Path == y.Path && x.Dir == y.Dir && x.V1 == y.V1 && x.Hierarchy == y.Hierarchy &&
		x.Name == y.Name && x.Ino == y.Ino && x.Netns == y.Netns && x.Index == y.Index && x.LinkType == y.LinkType &&
		x.MntNS == y.MntNS && x.NSPID == y.NSPID && x.FSType == y.FSType && slices.Equal(x.Holders, y.Holders) &&
		x.ModTime.Equal(y.ModTime) && x.Why == y.Why && x.Keep == y.Keep
}

// runtimeID is a sandbox's runtime and ID, without its namespace.
type runtimeID struct{ runtime, id string }

// runtimeRemoves reports whether the runtime of r is alive to remove the
// cgroups it made: a daemon that serves it runs (containerd or dockerd for
// Docker's /docker/<id>, kubelet for a pod's slice), or something listens
// on a supervisor socket a live sandbox of it named. Such a cgroup, empty
// a moment after its container was killed, is the runtime's to remove
// (runc delete, once containerd notices the exit), not a leftover.
func (f *Leftovers) runtimeRemoves(r *Rule, snap *proc.Snapshot) bool {
	if snap == nil {
		return false
	}
	if f.daemonSnap != snap || f.daemons == nil {
		f.daemonSnap, f.daemons = snap, map[string]bool{}
		if f.daemonExes == nil {
			f.daemonExes = daemonExes{}
		}
		for _, p := range snap.Procs {
			if p.Kernel {
				continue
			}
			if d, ok := f.daemonExes.of(p); ok {
				for _, rt := range d.Runtimes {
					f.daemons[rt] = true
				}
			}
		}
	}
	if f.daemons[r.Name] {
		return true
	}
	for rule, socks := range f.sockets {
		if rule.Name != r.Name {
			continue
		}
		for s := range socks {
			if snap.Listeners[s] {
				return true
			}
		}
	}
	return false
}

// Live returns a sandbox of the runtime with processes and this ID, in
// namespace ns (any namespace when either side has none), or nil.
func (v *View) Live(runtime, ns, id string) *Sandbox {
	var same []*Sandbox
	for _, sb := range v.Sandboxes {
		if sb.Runtime == runtime && (sb.ID == id || slices.Contains(sb.Aliases, id)) && len(sb.Members) > 0 {
			same = append(same, sb)
		}
	}
	return liveIn(same, ns)
}

// liveIn returns the first of sbs in namespace ns (any when either side
// has none).
func liveIn(sbs []*Sandbox, ns string) *Sandbox {
	for _, sb := range sbs {
		if ns == "" || sb.Namespace == "" || sb.Namespace == ns {
			return sb
		}
	}
	return nil
}

// decideRemovable decides what of a leftover sandbox may be removed: nothing a live
// supervisor of its runtime may still own (a runner that made the
// workspace a moment before it starts the VM), no unit a running systemd
// owns, and only
// paths that name the ID as a whole component.
func (f *Leftovers) decideRemovable(sb *Sandbox, v *View) {
	sb.Dead = true
	sb.Badges = []Badge{BadgeLeftover}
	alive, note := f.SupervisorAlive(sb, v)
	sb.Supervised = alive
	sb.SupervisorNote = "no process left; " + note
	// A teardown removes them in this order: what lives in or on another
	// leftover first, the deepest mount first.
	slices.SortStableFunc(sb.Leftovers, func(a, b Leftover) int {
		if r := kindRank(a.Kind) - kindRank(b.Kind); r != 0 {
			return r
		}
		if a.Kind == proc.KindMount {
			return strings.Count(b.Path, "/") - strings.Count(a.Path, "/")
		}
		return strings.Compare(a.Path, b.Path)
	})
	for i := range sb.Leftovers {
		l := &sb.Leftovers[i]
		switch {
		case l.Keep != "":
			// kept for a reason of its kind, found with it
		case l.Kind == proc.KindCgroup && SystemdOwns(v.Snapshot, l.Path):
			l.Keep = "a systemd unit's cgroup: systemd removes it (systemctl stop)"
		case l.Kind == proc.KindCgroup && l.Dir == "":
			l.Keep = "no cgroupfs mount reaches it"
		case alive:
			l.Keep = note + ": the runtime owns it"
		case (l.Kind == proc.KindNetns || l.Kind == proc.KindLink) && !strings.Contains(l.Name, sb.ID):
			l.Keep = "its name does not hold the sandbox ID"
		case l.Kind != proc.KindCgroup && l.Kind != proc.KindNetns && l.Kind != proc.KindLink && !SafeCleanupPath(l.Path, sb.ID):
			l.Keep = "not an absolute, clean path naming the sandbox ID"
		}
	}
	// A directory holding something kept stays too: removing it would
	// take the kept thing with it (a socket something listens on, a mount
	// a process works in).
	for i := range sb.Leftovers {
		d := &sb.Leftovers[i]
		if d.Kind != proc.KindDir || d.Keep != "" {
			continue
		}
		for _, o := range sb.Leftovers {
			if o.Keep != "" && o.Kind != proc.KindCgroup && o.Kind != proc.KindLink && strings.HasPrefix(o.Path, d.Path+"/") {
				d.Keep = "holds " + string(o.Kind) + " " + o.Path + ", which is kept"
				break
			}
		}
	}
}

// SupervisorAlive reports whether a supervisor of a leftover sandbox's
// runtime lives in snap: a process its ancestor pattern matches, or a
// listener on a socket a sandbox of the runtime named. A socket table
// that could not be read counts as alive: an unknown must never let a
// removal through.
//
// A leftover whose rule captured a {base} (vm0's {base}/workspaces/{id})
// belongs to the supervisor that owns that base, not to any live process
// of the runtime: a runner of another --config with other workspaces
// keeps nothing of it. A live supervisor is known to own the bases of the
// live sandboxes it supervises in v; one that supervises none yet may be
// about to start a VM in any base, and keeps it.
func (f *Leftovers) SupervisorAlive(sb *Sandbox, v *View) (bool, string) {
	for _, r := range sb.rules {
		if r.Supervisor.Ancestor != nil || r.Supervisor.SocketFlag != "" {
			if base := sb.Vars["base"]; base != "" && r.Supervisor.Ancestor != nil {
				f.forSnapshot(v.Snapshot)
				k := ruleBase{r, base}
				a, ok := f.baseMemo[k]
				if !ok {
					a.alive, a.note = baseOwnerAlive(r, base, v)
					f.baseMemo[k] = a
				}
				return a.alive, a.note
			}
			return f.supervisorAlive(r, v.Snapshot)
		}
	}
	return false, "rule names no supervisor"
}

// baseOwnerAlive reports whether a live supervisor of r's runtime may own
// base: one that supervises a live sandbox in base, or one that
// supervises no live sandbox at all (the runner that made a workspace a
// moment before it starts the VM).
func baseOwnerAlive(r *Rule, base string, v *View) (bool, string) {
	bases := map[proc.Identity][]string{}
	for _, sb := range v.Sandboxes {
		if sb.Supervisor != nil && len(sb.Members) > 0 && sb.Runtime == r.Name {
			if b := sb.Vars["base"]; b != "" && !slices.Contains(bases[sb.Supervisor.ID()], b) {
				bases[sb.Supervisor.ID()] = append(bases[sb.Supervisor.ID()], b)
			}
		}
	}
	var others []string
	for _, p := range v.Snapshot.Procs {
		if p.Kernel || p.PID <= 1 || !r.Supervisor.Ancestor.MatchString(strings.Join(p.Argv, " ")) {
			continue
		}
		owns := bases[p.ID()]
		switch {
		case slices.Contains(owns, base):
			return true, "supervisor " + describe(p) + " of " + r.Name + " is alive and owns " + base
		case len(owns) == 0:
			return true, "supervisor " + describe(p) + " of " + r.Name + " is alive and runs no sandbox yet: it may own " + base
		}
		others = append(others, describe(p)+" owns "+strings.Join(owns, ", "))
	}
	if len(others) == 0 {
		return false, "no supervisor of " + r.Name + " is alive"
	}
	return false, "no live supervisor of " + r.Name + " owns " + base + " (" + strings.Join(others, "; ") + ")"
}

// forSnapshot forgets the supervisor answers of any other snapshot.
func (f *Leftovers) forSnapshot(snap *proc.Snapshot) {
	if f.supSnap != snap || f.supMemo == nil {
		f.supSnap, f.supMemo, f.baseMemo = snap, map[*Rule]supervisorAnswer{}, map[ruleBase]supervisorAnswer{}
	}
}

// ruleBase is a question baseOwnerAlive answers.
type ruleBase struct {
	r    *Rule
	base string
}

type supervisorAnswer struct {
	alive bool
	note  string
}

// supervisorAlive answers SupervisorAlive for a rule that names a
// supervisor. The answer depends on the rule, the snapshot and the
// sockets recorded, not on the sandbox, so it is remembered for the
// snapshot: an ancestor pattern is tried on the argv of every process,
// and a refresh judges every leftover sandbox of a runtime against the
// same snapshot (500 dead VMs' workspaces on a host of 10,000 processes
// cost 2.6 s a refresh without it).
func (f *Leftovers) supervisorAlive(r *Rule, snap *proc.Snapshot) (bool, string) {
	f.forSnapshot(snap)
	if a, ok := f.supMemo[r]; ok {
		return a.alive, a.note
	}
	alive, note := f.askSupervisor(r, snap)
	f.supMemo[r] = supervisorAnswer{alive, note}
	return alive, note
}

func (f *Leftovers) askSupervisor(r *Rule, snap *proc.Snapshot) (bool, string) {
	sup := r.Supervisor
	if sup.Ancestor != nil {
		for _, p := range snap.Procs {
			if !p.Kernel && p.PID > 1 && sup.Ancestor.MatchString(strings.Join(p.Argv, " ")) {
				return true, "supervisor " + describe(p) + " of " + r.Name + " is alive"
			}
		}
		return false, "no supervisor of " + r.Name + " is alive"
	}
	if snap.Listeners == nil {
		return true, "unix sockets unreadable: cannot tell whether the supervisor of " + r.Name + " lives"
	}
	for _, s := range sortedKeys(f.sockets[r]) {
		if snap.Listeners[s] {
			return true, "supervisor of " + r.Name + " listens on " + s
		}
	}
	if len(f.sockets[r]) == 0 {
		return false, "supervisor of " + r.Name + " unknown (no live sandbox named its socket)"
	}
	return false, "nothing listens on the supervisor sockets of " + r.Name
}

// VirtualLinkTypes are the netlink device types a link leftover may be:
// devices a runtime makes for a sandbox, never a physical NIC or the
// loopback.
var VirtualLinkTypes = []string{"tuntap", "veth", "bridge", "macvlan", "macvtap", "ipvlan", "vxlan", "dummy"}

// fits says which template of which rule g was made from.
func fits(g Glob) string {
	if g.Rule == nil {
		return ""
	}
	src := "leftovers"
	if slices.Contains(g.Rule.Cleanup, g.Template) {
		src = "cleanup"
	}
	return "fits the " + src + " template " + g.Template + " of rule " + g.Rule.Name + " (" + g.Rule.Source + ") and no live process has the ID"
}

// nameGlob finds the glob of kind k that a name fits, and its ID.
func nameGlob(globs []Glob, k proc.PathKind, name string) (Glob, string, bool) {
	for _, g := range globs {
		if g.Kind != k {
			continue
		}
		if id, ok := g.MatchName(name); ok {
			return g, id, true
		}
	}
	return Glob{}, "", false
}

// PIDList is "pid 12" or "pids 12, 13".
func PIDList(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	if len(s) == 1 {
		return "pid " + s[0]
	}
	return "pids " + strings.Join(s, ", ")
}
