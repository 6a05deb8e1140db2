package ui

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/model/query"
)

// TestFilterSandboxes runs filters over the fixture fleet and lists the
// sandboxes (and host processes) that pass.
func TestFilterSandboxes(t *testing.T) {
	v := fleetViews(1)[0]
	for _, tc := range []struct {
		q         string
		sandboxes []string
		host      []int
	}{
		{"", []string{idVM0, idOrphan, idShim, idPaused}, []int{1, 100, 500, 501, 502, 900}},
		{"badge:orphan", []string{idOrphan, idPaused}, nil},
		{"badge:zombie", []string{idVM0}, nil},
		{"!badge:orphan", []string{idVM0, idShim}, []int{1, 100, 500, 501, 502, 900}},
		{"runtime:vm0", []string{idVM0, idOrphan}, nil},
		{"containerd", []string{idShim, idPaused}, nil},        // runtime, as a plain term
		{"NGINX", []string{idShim}, nil},                       // a member's argv, any case
		{"vsock-proxy --port", []string{idVM0, idOrphan}, nil}, // every term must hold
		{"id:c0ffee", []string{idShim}, nil},
		{"unreadable", nil, nil},
		{"pid:401", []string{idPaused}, nil},
		{"sh", []string{idVM0, idShim, idPaused}, []int{500, 501}}, // zombie comm "sh", "-id", "/usr/sbin/sshd", "-bash"
		{"vim", nil, []int{502}},
		{"nothing-matches-this", nil, nil},
	} {
		t.Run(tc.q, func(t *testing.T) {
			f, err := query.Parse(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var sbs []string
			for _, sb := range v.Sandboxes {
				if f.Sandbox(sb) {
					sbs = append(sbs, sb.ID)
				}
			}
			var host []int
			for _, p := range v.Unattributed {
				if f.Process(p) {
					host = append(host, p.PID)
				}
			}
			if !slices.Equal(sbs, tc.sandboxes) {
				t.Errorf("sandboxes %v, want %v", sbs, tc.sandboxes)
			}
			if !slices.Equal(host, tc.host) {
				t.Errorf("host processes %v, want %v", host, tc.host)
			}
		})
	}
}

// TestFilterLive types a filter and checks the rows follow each key.
func TestFilterLive(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(120, 30), m.Init()())
	count := func() int {
		n := 0
		for _, r := range m.table.rows {
			if r.kind == rowSandbox {
				n++
			}
		}
		return n
	}
	settle(m, keys("f4")...)
	for _, step := range []struct {
		typed string
		want  int
	}{{"p", 4}, {"py", 1}, {"pyt", 1}, {"pytx", 0}} {
		settle(m, typeText(step.typed[len(step.typed)-1:])...)
		if got := count(); got != step.want {
			t.Errorf("after %q: %d sandboxes, want %d", step.typed, got, step.want)
		}
	}
	settle(m, keys("backspace", "enter")...)
	if m.mode != modeNormal || m.filterQ != "pyt" || count() != 1 {
		t.Errorf("enter: mode %v, filter %q, %d rows; want the filter kept", m.mode, m.filterQ, count())
	}
	settle(m, keys("/", "esc")...)
	if m.filterQ != "" || count() != 4 {
		t.Errorf("esc: filter %q, %d rows; want it cleared", m.filterQ, count())
	}
}

// TestFilterErrorUnderPrompt types nonsense: the error names the valid
// keys or badges under the prompt, the list keeps the last filter that
// parsed (a half-typed "badge:" must not blank it), and enter does not
// accept it.
func TestFilterErrorUnderPrompt(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(120, 30), m.Init()())
	for _, tc := range []struct{ typed, want string }{
		{"foo:bar", "the keys are id:, badge:, runtime:, pid:"},
		{"badge:bogus", "badge: takes orphan, zombie, paused"},
		{"badge:", "badge: needs a value"},
	} {
		t.Run(tc.typed, func(t *testing.T) {
			settle(m, keys("/")...)
			settle(m, typeText(tc.typed)...)
			if !strings.Contains(m.View(), tc.want) {
				t.Errorf("screen does not say %q:\n%s", tc.want, m.View())
			}
			if m.filterQ == tc.typed {
				t.Errorf("the filter %q was applied", tc.typed)
			}
			settle(m, keys("enter")...)
			if m.mode != modeFilter {
				t.Errorf("enter accepted %q", tc.typed)
			}
			settle(m, keys("esc")...)
			if m.mode != modeNormal || m.filterQ != "" || m.fltErr != nil {
				t.Errorf("esc: mode %v filter %q err %v", m.mode, m.filterQ, m.fltErr)
			}
		})
	}
	settle(m, keys("?")...)
	for _, l := range query.Syntax {
		if !strings.Contains(m.View(), l[0]) {
			t.Errorf("? help does not show the filter term %q", l[0])
		}
	}
}
