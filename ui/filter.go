package ui

import (
	"strconv"
	"strings"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// filter is a parsed filter line: whitespace-separated terms that must all
// hold. A plain term is a case-insensitive substring of the sandbox ID, the
// runtime, or some member's comm or argv; "badge:orphan", "runtime:vm0",
// "id:7d1e" and "pid:4242" look at one field; a leading "!" negates a term.
type filter struct {
	terms []term
}

type term struct {
	field string // "" for any of ID, runtime, comm, argv
	value string // lower case
	not   bool
}

var filterFields = map[string]bool{"badge": true, "runtime": true, "id": true, "pid": true}

func parseFilter(q string) filter {
	var f filter
	for _, w := range strings.Fields(strings.ToLower(q)) {
		t := term{value: w}
		if rest, ok := strings.CutPrefix(w, "!"); ok && rest != "" {
			t.not, t.value = true, rest
		}
		if field, value, ok := strings.Cut(t.value, ":"); ok && filterFields[field] {
			t.field, t.value = field, value
		}
		f.terms = append(f.terms, t)
	}
	return f
}

func (f filter) empty() bool { return len(f.terms) == 0 }

// sandbox reports whether a sandbox passes: every term is matched by the
// sandbox itself or by one of its members.
func (f filter) sandbox(sb *model.Sandbox) bool {
	for _, t := range f.terms {
		if t.matchSandbox(sb) == t.not {
			return false
		}
	}
	return true
}

// process reports whether a process in no sandbox passes; sandbox-only
// terms (badge, runtime, id) never match one.
func (f filter) process(p *proc.Process) bool {
	for _, t := range f.terms {
		if t.matchProcess(p) == t.not {
			return false
		}
	}
	return true
}

func (t term) matchSandbox(sb *model.Sandbox) bool {
	switch t.field {
	case "badge":
		return sb.HasBadge(model.Badge(t.value))
	case "runtime":
		return contains(sb.Runtime, t.value)
	case "id":
		return contains(sb.ID, t.value)
	}
	if t.field == "" && (contains(sb.ID, t.value) || contains(sb.Runtime, t.value)) {
		return true
	}
	for _, m := range sb.Members {
		if t.matchProcess(m.Process) {
			return true
		}
	}
	return false
}

func (t term) matchProcess(p *proc.Process) bool {
	switch t.field {
	case "pid":
		return strconv.Itoa(p.PID) == t.value
	case "":
		if contains(p.Comm, t.value) {
			return true
		}
		for _, a := range p.Argv {
			if contains(a, t.value) {
				return true
			}
		}
	}
	return false
}

// contains is a case-insensitive substring test; sub is lower case already.
func contains(s, sub string) bool {
	if len(sub) > len(s) {
		return false
	}
	return strings.Contains(strings.ToLower(s), sub)
}
