package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc/proctest"
)

// onePlural is a count of one before a plural, "1 processes", or "all 1".
var onePlural = regexp.MustCompile(`(^|[^0-9.:/])(1 [a-z]+(es|s)\b|all 1\b)`)

// notPlural are words ending in s that may follow a 1.
var notPlural = regexp.MustCompile(`^1 (process|is|was|has|this|its|less|status|alias|address|class|pass|press|access|focus|bus)$`)

// TestEveryCountThroughTheHelper: the commands' words for a host whose one
// sandbox has one process never say "1 …s": every count goes through
// words.Count.
func TestEveryCountThroughTheHelper(t *testing.T) {
	root := proctest.Fixture(t, filepath.Join("..", "..", "proc", "testdata", "host"))
	roots := []string{"--proc-root", filepath.Join(root, "proc"), "--sys-root", filepath.Join(root, "sys")}
	for _, args := range [][]string{
		{"list"}, {"list", "--tree", "--all"}, {"list", "--json"},
		{"kill", "--dry-run", "box"},
	} {
		_, out, errOut := sandtop(t, append(args, roots...)...)
		text := out + errOut
		if strings.TrimSpace(text) == "" {
			t.Errorf("%v printed nothing", args)
		}
		for _, m := range onePlural.FindAllStringSubmatch(text, -1) {
			if !notPlural.MatchString(m[2]) {
				t.Errorf("%v says %q:\n%s", args, m[2], text)
			}
		}
	}
}
