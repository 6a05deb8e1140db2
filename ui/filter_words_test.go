package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestFilterErrorNamesRuntimesAndWraps: at 80 columns runtime:dockr is an
// error under the prompt that names the runtimes on the host, wrapped,
// never cut; the list keeps its last good filter.
func TestFilterErrorNamesRuntimesAndWraps(t *testing.T) {
	m := newTestModel(t, &fakeSource{views: fleetViews(1)}, &fakeKiller{})
	settle(m, size(80, 24), m.Init()())
	settle(m, keys("/")...)
	settle(m, typeText("runtime:dockr")...)
	if m.fltErr == nil {
		t.Fatalf("runtime:dockr: error %v, %d shown", m.fltErr, m.shown)
	}
	foot := ansi.Strip(m.helpView())
	for _, l := range strings.Split(foot, "\n") {
		if ansi.StringWidth(l) > 80 || strings.HasSuffix(l, "…") {
			t.Errorf("a line of the error is cut: %q", l)
		}
	}
	if !strings.Contains(strings.ReplaceAll(foot, "\n", " "), "containerd, vm0") || !strings.Contains(foot, "firecracker") {
		t.Errorf("the error does not name the runtimes here and the presets':\n%s", foot)
	}
	settle(m, keys("esc", "/")...)
	settle(m, typeText(`"nginx -g"`)...)
	if m.fltErr != nil || m.shown != 1 {
		t.Errorf(`"nginx -g": error %v, %d shown, want the nginx pod`, m.fltErr, m.shown)
	}
}
