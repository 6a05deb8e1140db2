// Package query is sandtop's filter language: the line an operator types
// after / in the live screen, and what any command that selects sandboxes
// by condition parses. It is pure: a string in, a predicate out, no I/O.
//
// A query is whitespace-separated terms that must all hold:
//
//	word            the sandbox ID, the runtime, or a member's comm or argv
//	                contains word (any case)
//	id:PREFIX       the sandbox ID (or an alias) starts with PREFIX
//	badge:NAME      the sandbox carries the badge (model.Badges lists them)
//	runtime:NAME    the sandbox's runtime is NAME
//	pid:N           process N is a member
//	unreadable      some member could not be read in full
//	!term           the term does not hold
//	"a:b"           quotes make a word of anything, a colon included
//
// Unknown keys, unknown badges, empty values and pids that are not numbers
// are errors that name what is valid: a filter that silently matches
// nothing is the mistake an operator cannot see.
package query

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// The keys a term can name. Word is a term without a key.
const (
	Word       = ""
	ID         = "id"
	Badge      = "badge"
	Runtime    = "runtime"
	PID        = "pid"
	Unreadable = "unreadable"
)

// keys lists the key:value keys in the order errors and help name them.
var keys = []string{ID, Badge, Runtime, PID}

// Syntax is one line per form of term, for help screens and docs/screen.md:
// the package doc above says the same at more length.
var Syntax = [][2]string{
	{"word", "ID, runtime, comm or argv contains word"},
	{"id:PREFIX", "the ID starts with PREFIX"},
	{"badge:NAME", "has it: " + badgeNames()},
	{"runtime:NAME", "the runtime is NAME"},
	{"pid:N", "process N is a member"},
	{"unreadable", "some member is partly unreadable"},
	{"!term", "the term does not hold"},
}

// Query is a parsed filter; the zero Query matches everything.
type Query struct {
	terms []term
}

type term struct {
	key   string
	value string // lower case; the pid in decimal for PID
	pid   int
	not   bool
}

// Parse reads a filter line. The error names the term at fault and what
// would be valid there.
func Parse(s string) (Query, error) {
	words, err := split(s)
	if err != nil {
		return Query{}, err
	}
	var q Query
	for _, w := range words {
		t, err := parseTerm(w)
		if err != nil {
			return Query{}, err
		}
		q.terms = append(q.terms, t)
	}
	return q, nil
}

// token is one whitespace-separated word; quoted words are never keys.
type token struct {
	text   string
	quoted bool
	not    bool
}

// split cuts s at whitespace outside double quotes. A leading ! before a
// quoted word negates it.
func split(s string) ([]token, error) {
	var out []token
	var cur strings.Builder
	var tok token
	in, started := false, false
	flush := func() {
		if started {
			tok.text = cur.String()
			out = append(out, tok)
		}
		cur.Reset()
		tok, started = token{}, false
	}
	for _, r := range s {
		switch {
		case r == '"' && in:
			in = false
		case r == '"':
			if cur.Len() > 0 {
				return nil, fmt.Errorf("a quote must start a word: %q", cur.String()+`"`)
			}
			in, started, tok.quoted = true, true, true
		case in:
			cur.WriteRune(r)
		case r == ' ' || r == '\t' || r == '\n':
			flush()
		case r == '!' && !started:
			started, tok.not = true, true
		case r == '!' && tok.not && cur.Len() == 0 && !tok.quoted:
			// "!!x" is not x: a filter that reads as one thing and does
			// another is worse than an error.
			return nil, errors.New("!! is not a term: one ! negates the term after it, as in !badge:paused")
		default:
			started = true
			cur.WriteRune(r)
		}
	}
	if in {
		return nil, errors.New("a quote is not closed")
	}
	flush()
	return out, nil
}

func parseTerm(tk token) (term, error) {
	t := term{value: strings.ToLower(tk.text), not: tk.not}
	if t.value == "" {
		if tk.quoted {
			return term{}, errors.New(`"" matches everything: leave it out`)
		}
		return term{}, errors.New("! needs a term after it, as in !badge:orphan")
	}
	if tk.quoted {
		return t, nil
	}
	if t.value == Unreadable {
		t.key, t.value = Unreadable, ""
		return t, nil
	}
	k, v, ok := strings.Cut(t.value, ":")
	if !ok || !isKey(k) {
		// A colon after something that is not a word (a path, an
		// address) is part of the text searched for.
		return t, nil
	}
	t.key, t.value = k, v
	switch k {
	case ID, Badge, Runtime, PID:
	default:
		return term{}, fmt.Errorf("unknown key %q in %q: the keys are %s (or quote the word: \"%s\")",
			k+":", tk.text, keyNames(), tk.text)
	}
	if v == "" {
		return term{}, fmt.Errorf("%s needs a value: %s", k+":", valueHint(k))
	}
	switch k {
	case Badge:
		if !isBadge(v) {
			return term{}, fmt.Errorf("unknown badge %q: badge: takes %s", v, badgeNames())
		}
	case PID:
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return term{}, fmt.Errorf("pid:%s is not a process ID: pid: takes a positive number", v)
		}
		t.pid = n
	}
	return t, nil
}

// isKey reports whether k looks like a key: letters only. "http" in
// "http://x" does, which is why an unknown key is an error and quoting
// is the way out.
func isKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

func isBadge(v string) bool {
	for _, b := range model.Badges {
		if string(b) == v {
			return true
		}
	}
	return false
}

func valueHint(k string) string {
	switch k {
	case ID:
		return "the start of a sandbox ID, as in id:7d1e"
	case Badge:
		return badgeNames()
	case Runtime:
		return "a runtime's name, as in runtime:firecracker"
	}
	return "a process ID, as in pid:4242"
}

func keyNames() string {
	ks := make([]string, len(keys))
	for i, k := range keys {
		ks[i] = k + ":"
	}
	return strings.Join(ks, ", ")
}

func badgeNames() string {
	bs := make([]string, len(model.Badges))
	for i, b := range model.Badges {
		bs[i] = string(b)
	}
	return strings.Join(bs, ", ")
}

// Empty reports whether the query has no terms (it matches everything).
func (q Query) Empty() bool { return len(q.terms) == 0 }

// Restricts reports whether some term that is not negated names key:
// Restricts(Badge) is true for "badge:orphan" and false for
// "!badge:paused" or "nginx". An automatic action that must be aimed at a
// condition asks this before acting on what the query selects.
func (q Query) Restricts(key string) bool {
	for _, t := range q.terms {
		if t.key == key && !t.not {
			return true
		}
	}
	return false
}

// Runtimes returns the runtime: values, so that a caller who knows the
// runtimes in play can say when one is named that none has.
func (q Query) Runtimes() []string {
	var out []string
	for _, t := range q.terms {
		if t.key == Runtime {
			out = append(out, t.value)
		}
	}
	return out
}

// CheckRuntimes reports a runtime: term that names no runtime there is: not
// one of here (the runtimes on the host) nor of presets (those sandtop
// knows), in any case. The error names them, as an unknown badge's does:
// "runtime:dockr" must not pass for "no sandbox of that runtime".
func (q Query) CheckRuntimes(here, presets []string) error {
	for _, rt := range q.Runtimes() {
		known := false
		for _, k := range append(slices.Clip(here), presets...) {
			known = known || strings.EqualFold(k, rt)
		}
		if !known {
			return fmt.Errorf("unknown runtime %q: runtime: takes one here (%s) or a preset's (%s)",
				rt, listOrNone(here), listOrNone(presets))
		}
	}
	return nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Sandbox reports whether a sandbox passes: every term holds for the
// sandbox itself or for one of its members.
func (q Query) Sandbox(sb *model.Sandbox) bool {
	for _, t := range q.terms {
		if t.sandbox(sb) == t.not {
			return false
		}
	}
	return true
}

// Process reports whether a process in no sandbox passes. Terms about a
// sandbox (id:, badge:, runtime:) hold for no such process.
func (q Query) Process(p *proc.Process) bool {
	for _, t := range q.terms {
		if t.process(p) == t.not {
			return false
		}
	}
	return true
}

func (t term) sandbox(sb *model.Sandbox) bool {
	switch t.key {
	case Badge:
		return sb.HasBadge(model.Badge(t.value))
	case Runtime:
		return strings.EqualFold(sb.Runtime, t.value)
	case ID:
		return sb.HasNamePrefix(t.value, hasPrefixFold)
	case Word:
		if contains(sb.Name(), t.value) || contains(sb.Runtime, t.value) {
			return true
		}
	}
	for _, m := range sb.Members {
		if t.process(m.Process) {
			return true
		}
	}
	return false
}

func (t term) process(p *proc.Process) bool {
	switch t.key {
	case PID:
		return p.PID == t.pid
	case Unreadable:
		return p.Partial
	case Word:
		return MatchProcess(p, t.value)
	}
	return false
}

// MatchProcess reports whether a process's comm or argv contains word
// (lower case), the plain-word test of a query: search uses it too.
func MatchProcess(p *proc.Process, word string) bool {
	if contains(p.Comm, word) {
		return true
	}
	for _, a := range p.Argv {
		if contains(a, word) {
			return true
		}
	}
	// A quoted phrase ("nginx -g") matches across the arguments, as the
	// row shows them joined.
	return strings.ContainsRune(word, ' ') && len(p.Argv) > 1 && contains(strings.Join(p.Argv, " "), word)
}

// contains is a case-insensitive substring test; sub is lower case already.
func contains(s, sub string) bool {
	if len(sub) > len(s) {
		return false
	}
	return strings.Contains(strings.ToLower(s), sub)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
