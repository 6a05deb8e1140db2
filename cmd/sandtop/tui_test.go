package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/teardown"
	"github.com/sandtop/sandtop/ui"
)

// TestTUIFlags checks the flags the live screen takes, on the root command
// and on watch, and that watch cannot be talked out of read-only mode.
func TestTUIFlags(t *testing.T) {
	root := newRootCmd()
	for name, def := range map[string]string{
		"interval": "1s", "read-only": "false", "grace": teardown.DefaultGrace.String(), "audit-log": "", "all": "false",
	} {
		f := root.Flags().Lookup(name)
		if f == nil {
			t.Errorf("root has no --%s", name)
			continue
		}
		if f.DefValue != def {
			t.Errorf("--%s defaults to %q, want %q", name, f.DefValue, def)
		}
	}
	watch, _, err := root.Find([]string{"watch"})
	if err != nil || watch.Name() != "watch" {
		t.Fatalf("no watch command: %v", err)
	}
	if watch.Example == "" {
		t.Errorf("watch has no example in its help")
	}
	for _, name := range []string{"interval", "all"} {
		if watch.Flags().Lookup(name) == nil {
			t.Errorf("watch has no --%s", name)
		}
	}
	for _, name := range []string{"read-only", "grace", "audit-log"} {
		if watch.Flags().Lookup(name) != nil {
			t.Errorf("watch takes --%s, which only a screen that kills needs", name)
		}
	}
}

// TestTUIUsageErrors checks that bad flags and a missing terminal are
// usage errors (exit 2), caught before anything is scanned.
func TestTUIUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--interval", "10ms"}, "from 100ms to 24h"},
		{[]string{"--grace", "-1s"}, "from 0s to 1h"},
		{[]string{"watch", "--interval", "0s"}, "from 100ms to 24h"},
		{nil, "needs a terminal"},
		{[]string{"watch"}, "needs a terminal"},
		{[]string{"--read-only"}, "needs a terminal"},
	} {
		name := strings.Join(tc.args, " ")
		if name == "" {
			name = "no arguments"
		}
		t.Run(name, func(t *testing.T) {
			code, _, errOut := sandtop(t, tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, exitUsage, tc.want)
			}
		})
	}
}

// TestTUIReadOnlyBuildsNoEngine checks the wiring: in read-only mode the
// screen gets no Killer at all (the engine is never constructed); with
// killing allowed it gets one, and an audit log.
func TestTUIReadOnlyBuildsNoEngine(t *testing.T) {
	g := &globals{procRoot: "/proc"}
	sc, err := g.scanner(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	rules := model.Presets()
	for _, tc := range []struct {
		name     string
		readOnly bool
	}{{"read-only", true}, {"killing allowed", false}} {
		t.Run(tc.name, func(t *testing.T) {
			o := &tuiOpts{readOnly: tc.readOnly, interval: time.Second, grace: time.Second}
			opts, err := o.uiOptions(g, rules, sc, nil)
			if err != nil {
				t.Fatal(err)
			}
			if (opts.Killer == nil) != tc.readOnly {
				t.Errorf("Killer = %v with read-only %v", opts.Killer, tc.readOnly)
			}
			if k, _ := opts.Killer.(*engineKiller); !tc.readOnly && (k == nil || k.audit == "") {
				t.Errorf("Killer = %+v: no audit log with read-only %v", opts.Killer, tc.readOnly)
			}
			if got := ui.New(opts).ReadOnly(); got != tc.readOnly {
				t.Errorf("ui.New(...).ReadOnly() = %v, want %v", got, tc.readOnly)
			}
		})
	}
}
