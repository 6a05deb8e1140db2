package model

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

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
//
// The parse tree is read as parsed, not simplified: Simplify spells a
// counted repeat out as nested optionals, so an ID class such as
// `[A-Za-z0-9_-]{1,128}` became 128 levels for literalsOf to walk, some
// 5 ms of CPU a regexp, paid by every short-lived command. literalsOf
// reads OpRepeat itself, and any node it does not know says nothing.
func requiredLiterals(expr string) []string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	return literalsOf(re).required()
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
