package model

import (
	"errors"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	v := Build(snap(
		pr(300, 1, "sim --sandbox 0123456789abcdef-one"),
		pr(310, 1, "sim --sandbox 0123456789abcdef-two"),
		pr(320, 1, "sim --sandbox ffff0000"),
	), rules, nil)
	tests := []struct {
		arg, want, errHas string
	}{
		{arg: "ffff0000", want: "ffff0000"},
		{arg: "ff", want: "ffff0000"},
		{arg: "0123456789abcdef-t", want: "0123456789abcdef-two"},
		{arg: "0123", errHas: "ambiguous; candidates:\n  0123456789abcdef-one  sim\n  0123456789abcdef-two  sim"},
		{arg: "nope", errHas: `no sandbox ID starts with "nope"; candidates:`},
		{arg: "", errHas: "empty sandbox ID"},
		{arg: "  ", errHas: "empty sandbox ID"},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			sb, err := v.Resolve(tc.arg)
			if tc.errHas != "" {
				if err == nil || !errors.Is(err, ErrResolve) || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want ErrResolve containing %q", err, tc.errHas)
				}
				return
			}
			if err != nil || sb.ID != tc.want {
				t.Fatalf("got %v, %v; want %s", sb, err, tc.want)
			}
		})
	}
}

func TestShortIDs(t *testing.T) {
	got := ShortIDs([]string{
		"0123456789abcdef-one", "0123456789abcdef-two", "ffff0000", "aaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaab",
	}, 12)
	want := map[string]string{
		"0123456789abcdef-one": "0123456789abcdef-o",
		"0123456789abcdef-two": "0123456789abcdef-t",
		"ffff0000":             "ffff0000",
		"aaaaaaaaaaaaaaaaaaaa": "aaaaaaaaaaaaaaaaaaaa",
		"aaaaaaaaaaaaaaaaaaab": "aaaaaaaaaaaaaaaaaaab",
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("ShortIDs[%s] = %q, want %q", id, got[id], w)
		}
	}
	if g := ShortIDs([]string{"7d1e2c3a-1111-4a4a-9b9b-0123456789ab"}, 12)["7d1e2c3a-1111-4a4a-9b9b-0123456789ab"]; g != "7d1e2c3a-111" {
		t.Errorf("lone ID shortened to %q, want 12 chars", g)
	}
}
