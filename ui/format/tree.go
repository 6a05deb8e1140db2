package format

import (
	"fmt"
	"strings"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// TreePrefix returns the glyphs drawn before a member in a pre-order tree
// listing ("│  ├─ "): one column per ancestor, telling whether that
// ancestor has siblings still to come, then the member's own branch.
func TreePrefix(m *model.Member) string {
	if m.Parent == nil {
		return ""
	}
	var cols []string
	for a := m.Parent; a.Parent != nil && len(cols) < MaxGlyphLevels; a = a.Parent {
		if last(a) {
			cols = append(cols, "   ")
		} else {
			cols = append(cols, "│  ")
		}
	}
	var b strings.Builder
	if more := m.Depth - 1 - len(cols); more > 0 {
		b.WriteString(elided(more))
	}
	for i := len(cols) - 1; i >= 0; i-- {
		b.WriteString(cols[i])
	}
	if last(m) {
		b.WriteString("└─ ")
	} else {
		b.WriteString("├─ ")
	}
	return b.String()
}

// TreeGlyphs are TreePrefix's glyphs for a node of any tree: lasts says,
// from the top level down to the node itself, whether each is the last of
// its siblings; a root (no lasts) has none.
func TreeGlyphs(lasts []bool) string {
	if len(lasts) == 0 {
		return ""
	}
	var b strings.Builder
	cols := lasts[:len(lasts)-1]
	if more := len(cols) - MaxGlyphLevels; more > 0 {
		b.WriteString(elided(more))
		cols = cols[more:]
	}
	for _, l := range cols {
		if l {
			b.WriteString("   ")
		} else {
			b.WriteString("│  ")
		}
	}
	if lasts[len(lasts)-1] {
		b.WriteString("└─ ")
	} else {
		b.WriteString("├─ ")
	}
	return b.String()
}

// MaxGlyphLevels bounds the levels of glyphs drawn before a node: a chain
// of processes can be as deep as a sandbox has pids, and a column a level
// would make each row, and the listing, grow with the square of the
// depth. The levels above are counted ("[+N]"), not drawn.
const MaxGlyphLevels = 32

func elided(levels int) string { return fmt.Sprintf("[+%d]", levels) }

func last(m *model.Member) bool {
	sib := m.Parent.Children
	return sib[len(sib)-1] == m
}

// Command is what a process row shows: argv joined (marked when it was
// cut), or [comm] for a process without one (kernel threads, zombies), as
// ps does.
func Command(p *proc.Process) string {
	if len(p.Argv) == 0 {
		return "[" + p.Comm + "]"
	}
	return strings.Join(p.Argv, " ") + ArgvCutMark(p)
}

// ArgvCutMark is what follows a command line sandtop did not read whole
// (proc.MaxArgvBytes), "" for one it did.
func ArgvCutMark(p *proc.Process) string {
	if !p.ArgvCut {
		return ""
	}
	return fmt.Sprintf(" …[cut at %d KiB]", proc.MaxArgvBytes>>10)
}

// CompressTree narrows tree glyphs made by TreePrefix to w cells a level
// (1 to 3): each level keeps its first w cells, so "│  ├─ " reads "│ ├─"
// at 2 and "│├" at 1, and a deep process keeps room for its command.
func CompressTree(prefix string, w int) string {
	if w >= 3 || prefix == "" {
		return prefix
	}
	runes := []rune(prefix)
	var b strings.Builder
	for i := 0; i+3 <= len(runes); i += 3 {
		b.WriteString(string(runes[i : i+max(w, 1)]))
	}
	return b.String()
}
