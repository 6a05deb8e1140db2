// Package words spells counts for people: every count sandtop prints goes
// through Count (or All), so that no line ever reads "1 processes". It is
// the lowest package of the tree, so that model, teardown, the screen and
// the commands all share the one helper.
package words

import "strconv"

// Count spells n things: "1 process", "3 processes", "0 processes".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// All spells every one of n things: "all 3 processes", but "the 1
// process" and "the 0 processes" (never "all 1 processes").
func All(n int, one, many string) string {
	if n == 1 || n == 0 {
		return "the " + Count(n, one, many)
	}
	return "all " + Count(n, one, many)
}
