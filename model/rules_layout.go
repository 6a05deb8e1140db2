package model

import "strings"

// tomlLayout records the line each key of a rules file is written on.
// BurntSushi/toml knows key positions only by dotted name ("rule.argv"), so
// the keys of every [[rule]] share one entry and its errors name the last
// rule's line; and MetaData gives no line at all for an unknown key. The
// scan below is only as much TOML as locating keys needs: it runs after the
// file has parsed, so it may trust the syntax.
type tomlLayout struct {
	top   map[string]int // keys and tables outside any [[rule]]
	rules []ruleLayout   // one per [[rule]] header, in order
}

type ruleLayout struct {
	line int
	keys map[string]int // "argv", "supervisor", "supervisor.ancestor"
}

func scanLayout(data []byte) tomlLayout {
	lay := tomlLayout{top: map[string]int{}}
	const (
		inTop = iota
		inRule
		inOther
	)
	var (
		where  = inTop
		prefix string // "supervisor." inside a [rule.supervisor] table
		val    valueScanner
	)
	for n, line := range strings.Split(string(data), "\n") {
		n++
		if val.open() {
			val.feed(line)
			continue
		}
		t := strings.TrimSpace(line)
		switch {
		case t == "" || t[0] == '#':
		case strings.HasPrefix(t, "[["):
			name := tableName(t[2:], "]]")
			if name == "rule" {
				lay.rules = append(lay.rules, ruleLayout{line: n, keys: map[string]int{}})
				where, prefix = inRule, ""
				continue
			}
			where = inOther
			setOnce(lay.top, strings.Split(name, ".")[0], n)
		case t[0] == '[':
			name := tableName(t[1:], "]")
			if sub, ok := strings.CutPrefix(name, "rule."); ok && len(lay.rules) > 0 {
				where, prefix = inRule, sub+"."
				setDotted(lay.rules[len(lay.rules)-1].keys, sub, n)
				continue
			}
			where = inOther
			setOnce(lay.top, strings.Split(name, ".")[0], n)
		default:
			key, rest, ok := splitKey(t)
			if !ok {
				continue
			}
			switch where {
			case inRule:
				setDotted(lay.rules[len(lay.rules)-1].keys, prefix+key, n)
			case inTop:
				setOnce(lay.top, strings.Split(key, ".")[0], n)
			}
			val.feed(rest)
		}
	}
	return lay
}

// topLine is where a top-level key is written (1 if it cannot be found).
func (l tomlLayout) topLine(key string) int {
	if n, ok := l.top[key]; ok {
		return n
	}
	return 1
}

// ruleLine is the line of the i-th [[rule]] header.
func (l tomlLayout) ruleLine(i int) int {
	if i < len(l.rules) {
		return l.rules[i].line
	}
	return l.topLine("rule")
}

// keyLine is where key is written in the i-th rule: the key itself, else
// the table or dotted key holding it, else the rule's header.
func (l tomlLayout) keyLine(i int, key string) int {
	if i >= len(l.rules) {
		return l.ruleLine(i)
	}
	for k := key; k != ""; {
		if n, ok := l.rules[i].keys[k]; ok {
			return n
		}
		dot := strings.LastIndexByte(k, '.')
		if dot < 0 {
			break
		}
		k = k[:dot]
	}
	return l.rules[i].line
}

func setOnce(m map[string]int, key string, line int) {
	if _, ok := m[key]; !ok {
		m[key] = line
	}
}

// setDotted records a dotted key and each of its parents ("supervisor").
func setDotted(m map[string]int, key string, line int) {
	for k := key; ; {
		setOnce(m, k, line)
		dot := strings.LastIndexByte(k, '.')
		if dot < 0 {
			return
		}
		k = k[:dot]
	}
}

// unquoteKey turns `"supervisor" . ancestor` into supervisor.ancestor.
func unquoteKey(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '"' || r == '\'' {
			return -1
		}
		return r
	}, s)
}

func tableName(s, closer string) string {
	name, _, _ := strings.Cut(s, closer)
	return unquoteKey(name)
}

// splitKey splits a `key = value` line at the first "=" outside quotes.
func splitKey(t string) (key, rest string, ok bool) {
	var quote byte
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '=':
			return unquoteKey(t[:i]), t[i+1:], true
		}
	}
	return "", "", false
}

// valueScanner follows a value across lines: inside a multi-line string or
// an array or inline table that is still open, a line holds no key.
type valueScanner struct {
	multi string // `"""` or `'''` while inside a multi-line string
	depth int    // open [ and {
}

func (v *valueScanner) open() bool { return v.multi != "" || v.depth > 0 }

func (v *valueScanner) feed(s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if v.multi != "" {
			switch {
			case c == '\\' && v.multi == `"""`:
				i++
			case strings.HasPrefix(s[i:], v.multi):
				i += 2
				v.multi = ""
			}
			continue
		}
		switch c {
		case '#':
			return
		case '"', '\'':
			if q := s[i : i+1]; strings.HasPrefix(s[i:], q+q+q) {
				v.multi = q + q + q
				i += 2
				continue
			}
			for i++; i < len(s) && s[i] != c; i++ {
				if c == '"' && s[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			v.depth++
		case ']', '}':
			if v.depth > 0 {
				v.depth--
			}
		}
	}
}
