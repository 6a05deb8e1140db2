package main

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"

	"github.com/sandtop/sandtop/ui"
)

// TestScreenKeyTable ties docs/screen.md's key table to the keymap: every
// key of every binding of the main screen is named in the table's first
// column, and every key the column names in backquotes is bound. A key
// added to the code and not to the page, or the reverse, fails here.
func TestScreenKeyTable(t *testing.T) {
	_, table, ok := strings.Cut(string(readDoc(t, "screen.md")), "| key | does |\n")
	if !ok {
		t.Fatal(`docs/screen.md has no "| key | does |" table`)
	}
	var col []string
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if cells := strings.Split(line, "|"); len(cells) > 3 && !strings.Contains(line, "---") {
			col = append(col, cells[1])
		}
	}
	keys := strings.Join(col, " ")
	bound := map[string]bool{}
	km := reflect.ValueOf(ui.DefaultKeyMap())
	for i := range km.NumField() {
		b, ok := km.Field(i).Interface().(key.Binding)
		if !ok {
			continue
		}
		for _, k := range b.Keys() {
			bound[k] = true
			if n := docKeyName(k); !strings.Contains(keys, n) {
				t.Errorf("docs/screen.md's key table does not name %s (%s, bound to %q)", n, km.Type().Field(i).Name, b.Help().Desc)
			}
		}
	}
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(keys, -1) {
		if !bound[m[1]] {
			t.Errorf("docs/screen.md's key table names `%s`, which no binding has", m[1])
		}
	}
}

// docKeyName is how the key table writes a key: arrows and page keys as
// glyphs and names, F-keys as F3, the rest in backquotes.
func docKeyName(k string) string {
	if n, ok := map[string]string{
		"up": "↑", "down": "↓", "left": "←", "right": "→", "pgup": "PgUp", "pgdown": "PgDn",
		"home": "Home", "end": "End", " ": "space", "shift+left": "shift+←", "shift+right": "shift+→",
	}[k]; ok {
		return n
	}
	if len(k) >= 2 && k[0] == 'f' && strings.Trim(k[1:], "0123456789") == "" {
		return "F" + k[1:]
	}
	return "`" + k + "`"
}
