package ui

import "github.com/sandtop/sandtop/model"

// shortNames keeps the rows' short sandbox names from one refresh to the
// next. They depend only on the sandboxes' runtimes, namespaces and IDs
// (their keys), which seldom change, and working them out anew allocated
// a few hundred kilobytes a refresh at a thousand sandboxes.
type shortNames struct {
	keys  []string
	byKey map[string]string
}

// of returns the short name of each of v's sandboxes, by key.
func (s *shortNames) of(v *model.View) map[string]string {
	if s != nil && s.byKey != nil && len(s.keys) == len(v.Sandboxes) {
		same := true
		for i, sb := range v.Sandboxes {
			if s.keys[i] != sb.Key() {
				same = false
				break
			}
		}
		if same {
			return s.byKey
		}
	}
	short := v.ShortNames(model.MinShortID)
	keys := make([]string, len(v.Sandboxes))
	byKey := make(map[string]string, len(v.Sandboxes))
	for i, sb := range v.Sandboxes {
		keys[i] = sb.Key()
		byKey[keys[i]] = short[sb]
	}
	if s != nil {
		s.keys, s.byKey = keys, byKey
	}
	return byKey
}
