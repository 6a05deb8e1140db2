package model

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzJSONSafe: whatever the string and however the writes are cut, the
// JSON that JSONSafe passes on decodes to the same value, and holds nothing
// a terminal would act on.
func FuzzJSONSafe(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]2;x\x07", "a\u009bb\u202e", "\x7f", "é😀\U000e0001", "\xff"} {
		f.Add(s, uint8(1))
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, s string, cut uint8) {
		raw, err := json.Marshal([]string{s, "-" + s})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		w := JSONSafe(&out)
		step := int(cut%7) + 1
		for i := 0; i < len(raw); i += step {
			w.Write(raw[i:min(i+step, len(raw))])
		}
		var want, got []string
		_ = json.Unmarshal(raw, &want)
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%q became %q, not JSON: %v", raw, out.Bytes(), err)
		}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("%q decodes to %q, want %q", out.Bytes(), got, want)
		}
		for _, r := range out.String() {
			if Unsafe(r) {
				t.Fatalf("%q keeps %U", out.Bytes(), r)
			}
		}
	})
}
