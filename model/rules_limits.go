package model

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
)

// The limits of a rules file. Each is far above any honest file (the
// built-in presets, written out, are 15 KB of 28 rules whose longest
// pattern is 255 bytes and compiles to 310 instructions, 2,666 in all)
// and keeps a hostile or broken one, or the rules a recording carries,
// from costing more than a fraction of a second and a few tens of MB to
// load, and from slowing every scan: every process is matched against
// every rule's patterns. docs/rules.md gives them to the user.
const (
	// MaxRulesFileBytes bounds the file: BurntSushi/toml keeps about
	// twenty times the file's size while it decodes.
	MaxRulesFileBytes = 1 << 20
	// MaxRules bounds the rules: a scan tries them in order on every
	// process that no earlier rule claimed.
	MaxRules = 1000
	// MaxPatternBytes bounds a regex's source.
	MaxPatternBytes = 4096
	// MaxPatternInsts bounds a regex's compiled program, which is what
	// matching costs per input byte and what it keeps in memory: a
	// counted repeat ("[a-z]{1,1000}") grows it far beyond its source.
	MaxPatternInsts = 10000
	// MaxRulesInsts bounds the programs of all the file's regexes
	// together: a thousand rules of patterns the presets' size.
	MaxRulesInsts = 200000
	// MaxValueBytes bounds every other string (a name, a flag, a template):
	// a path is at most PATH_MAX, 4096 bytes.
	MaxValueBytes = 4096
	// MaxListItems bounds each list (cleanup, leftovers, reconcile, inspect).
	MaxListItems = 64
	// maxNesting bounds how deep arrays and inline tables nest. A rules
	// file needs two levels; BurntSushi/toml's time grows with the cube of
	// the depth of nested inline tables (3,000 levels, 9 KB, took 16 s)
	// and the square of unclosed arrays' (300,000 levels: minutes and
	// gigabytes), so the depth is checked before the file is decoded.
	maxNesting = 16
)

// errTooBig marks an error of a rules file that exceeds a limit.
var errTooBig = errors.New("over the limit")

// nestingProblem scans data for arrays and inline tables nested deeper
// than maxNesting, skipping strings and comments, and returns the line of
// the first bracket too deep (0 when there is none). It needs no more of
// TOML than brackets, quotes and comments: a table header ("[[rule]]")
// opens and closes on its line, and whatever the scan gets wrong in a
// malformed file the decoder reports anyway.
func nestingProblem(data []byte) int {
	line, depth := 1, 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			quote := string(c)
			if i+2 < len(data) && data[i+1] == c && data[i+2] == c {
				quote = string([]byte{c, c, c})
			}
			i += len(quote)
			for i < len(data) && string(data[i:min(i+len(quote), len(data))]) != quote {
				switch {
				case data[i] == '\n':
					line++
				case data[i] == '\\' && c == '"':
					i++
					if i < len(data) && data[i] == '\n' {
						line++
					}
				}
				i++
			}
			i += len(quote) - 1
		case '[', '{':
			if depth++; depth > maxNesting {
				return line
			}
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return 0
}

// compilePattern compiles a rule's regex within the pattern limits, and
// returns the size of its program, which counts towards MaxRulesInsts.
// The program is sized before it is compiled (a bound from the parse
// tree), so a pattern far over the limit costs no more than its parse.
func compilePattern(s string) (*regexp.Regexp, int, error) {
	if len(s) > MaxPatternBytes {
		return nil, 0, fmt.Errorf("%w: the regex is %d bytes; the limit is %d", errTooBig, len(s), MaxPatternBytes)
	}
	tree, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		return nil, 0, err
	}
	if instBound(tree) > 4*MaxPatternInsts {
		return nil, 0, fmt.Errorf("%w: the regex compiles to far more than %d instructions, the limit", errTooBig, MaxPatternInsts)
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, 0, err
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return nil, 0, err
	}
	if n := len(prog.Inst); n > MaxPatternInsts {
		return nil, 0, fmt.Errorf("%w: the regex compiles to %d instructions; the limit is %d", errTooBig, n, MaxPatternInsts)
	}
	return re, len(prog.Inst), nil
}

// instBound is an upper bound of the instructions re compiles to, close
// to the true count (a repeat is compiled as that many copies), which
// saturates rather than overflows. The parser bounds the tree's depth
// (1,000 levels), so the recursion is bounded too.
func instBound(re *syntax.Regexp) int {
	const huge = 1 << 40
	sub := 0
	for _, s := range re.Sub {
		sub = min(sub+instBound(s), huge)
	}
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpConcat:
		return sub
	case syntax.OpAlternate:
		return sub + len(re.Sub)
	case syntax.OpCapture:
		return sub + 2
	case syntax.OpRepeat:
		// Min copies, then Max-Min optional ones (or one starred).
		optional := re.Max - re.Min
		if re.Max < 0 {
			optional = 1
		}
		return min(re.Min*sub+optional*(sub+1)+1, huge)
	default: // a leaf (a class, an anchor), or *, + and ? of one
		return sub + 1
	}
}
