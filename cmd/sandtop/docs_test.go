package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/model"
)

// TestDocsJSONFields holds docs/json.md to model.Document and to the plan
// kill --dry-run --json prints: every field either can carry, at any
// depth, is named in its section as a JSON key.
func TestDocsJSONFields(t *testing.T) {
	page := string(readDoc(t, "json.md"))
	list, plan, ok := strings.Cut(page, "\n# `sandtop kill --dry-run --json`")
	if !ok {
		t.Fatal("docs/json.md has no section for kill --dry-run --json")
	}
	docFields(t, list, reflect.TypeFor[model.Document](), "document")
	docFields(t, plan, reflect.TypeFor[planJSON](), "plan")
}

// docFields fails for each JSON field of ty, at any depth, that page
// never names.
func docFields(t *testing.T, page string, ty reflect.Type, root string) {
	t.Helper()
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || ty.PkgPath() == "time" {
			return
		}
		seen[ty] = true
		for f := range ty.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				walk(f.Type, path) // embedded: its fields are this object's
				continue
			}
			if !strings.Contains(page, `"`+name+`"`) && !strings.Contains(page, "`"+name+"`") {
				t.Errorf("docs/json.md never names the field %q (%s.%s)", name, path, f.Name)
			}
			walk(f.Type, path+"."+name)
		}
	}
	walk(ty, root)
	if len(seen) < 2 {
		t.Fatalf("walked only %d types of %s", len(seen), root)
	}
}

// TestDocsRuleKeys holds `sandtop help rules` and docs/rules.md to the
// keys the rules parser accepts: each key is explained in both.
func TestDocsRuleKeys(t *testing.T) {
	help := newRulesCmd(&globals{}).Long
	page := string(readDoc(t, "rules.md"))
	for _, key := range model.RuleKeys() {
		if !strings.Contains(help, "\n  "+key+" ") {
			t.Errorf("sandtop help rules does not explain the key %q", key)
		}
		if !strings.Contains(page, "\n"+key+" = ") {
			t.Errorf("docs/rules.md's rule example does not show the key %q", key)
		}
	}
}
