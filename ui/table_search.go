package ui

import (
	"strconv"
	"strings"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
)

// search returns the first row from start on (wrapping) whose ID, runtime,
// pid, comm or argv contains q (lower case), or -1. A collapsed sandbox
// whose own row does not match is looked into: when one of its members
// matches, search returns the sandbox's row and that member.
func (t *table) search(q string, start int) (int, *model.Member) {
	if q == "" || len(t.rows) == 0 {
		return -1, nil
	}
	n := len(t.rows)
	for k := 0; k < n; k++ {
		i := (start + k) % n
		r := &t.rows[i]
		if rowMatches(r, q) {
			return i, nil
		}
		if r.kind == rowSandbox && !r.open {
			for _, mb := range r.sb.Members {
				if strconv.Itoa(mb.PID) == q || query.MatchProcess(mb.Process, q) {
					return i, mb
				}
			}
		}
	}
	return -1, nil
}

func rowMatches(r *row, q string) bool {
	switch r.kind {
	case rowSandbox:
		return containsFold(r.sb.ID, q) || containsFold(r.sb.Runtime, q)
	case rowHost:
		return containsFold("(host)", q)
	}
	return strconv.Itoa(r.p.PID) == q || query.MatchProcess(r.p, q)
}

// containsFold is a case-insensitive substring test; sub is lower case.
func containsFold(s, sub string) bool {
	return len(sub) <= len(s) && strings.Contains(strings.ToLower(s), sub)
}
