package teardown

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRuntime writes a runtime as a shell script: each run of "reconcile"
// prints and exits as the next line of script says (the last repeats),
// and "inspect" does what inspect says. It stands in for a runtime whose
// own cleanup races the reconcile (podman's conmon running `podman
// container cleanup`), which a real one does only now and then.
func fakeRuntime(t *testing.T, reconcile []string, inspect string) (rec, insp []string) {
	t.Helper()
	d := t.TempDir()
	var b strings.Builder
	b.WriteString("#!/bin/sh\nn=$(cat '" + d + "/n' 2>/dev/null || echo 0); echo $((n+1)) > '" + d + "/n'\ncase $n in\n")
	for i, r := range reconcile {
		pat := "*"
		if i < len(reconcile)-1 {
			pat = string(rune('0' + i))
		}
		b.WriteString(pat + ") " + r + ";;\n")
	}
	b.WriteString("esac\n")
	write := func(name, body string) string {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return []string{write("reconcile", b.String()), "rm", "--force", "ctr1"},
		[]string{write("inspect", "#!/bin/sh\n"+inspect+"\n"), "container", "inspect", "ctr1"}
}

// TestReconcileSettlesAndAsks: a reconcile that loses a race with the
// runtime's own cleanup is tried again; a refusal that says the work is
// done counts only when the runtime's own view confirms it; the runtime's
// view is quoted from its own command, never guessed.
func TestReconcileSettlesAndAsks(t *testing.T) {
	const (
		improper = `echo "Error: container state improper: stopped" >&2; exit 125`
		noSuch   = `echo "Error: no such container ctr1" >&2; exit 125`
		ok       = `echo ctr1; exit 0`
		exited   = `echo '[{"Id":"ctr1","State":{"Status":"exited","ExitCode":137,"Health":{"Status":""}}}]'`
		paused   = `echo '[{"Id":"ctr1","State":{"Status":"paused","ExitCode":0}}]'`
		forgot   = `echo "Error: no such container ctr1" >&2; exit 125`
		runcStop = `echo '{"ociVersion":"1.0.2","id":"ctr1","pid":0,"status":"stopped"}'`
	)
	for _, tc := range []struct {
		name      string
		reconcile []string
		inspect   string
		want      Status
		words     []string
	}{
		{"second try wins", []string{improper, ok}, forgot, OK, []string{"(2 tries)", `no such container ctr1`}},
		{"already gone", []string{noSuch}, forgot, OK, []string{"(3 tries)", "nothing left to tell it", "inspect ctr1 says: Error: no such container ctr1"}},
		{"improper but exited", []string{improper}, exited, OK, []string{`status "exited" (exit code 137)`}},
		{"improper but stopped (runc)", []string{improper}, runcStop, OK, []string{`status "stopped"`}},
		{"improper and still paused", []string{improper}, paused, Fail, []string{"exit status 125", "state improper: stopped", `status "paused"`}},
		{"ran but still paused", []string{ok}, paused, Fail, []string{"but", `status "paused"`}},
		{"ran, runtime exited", []string{ok}, exited, OK, []string{`says: status "exited" (exit code 137)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, insp := fakeRuntime(t, tc.reconcile, tc.inspect)
			p := &Plan{Target: "sandbox ctr1", Runtime: "podman", Reconcile: rec, Inspect: insp}
			var events []Event
			ev := RunReconcile(context.Background(), p, func(e Event) { events = append(events, e) })
			if ev.Status != tc.want || len(events) != 1 {
				t.Errorf("status %s, want %s: %s", ev.Status, tc.want, ev.Detail)
			}
			for _, w := range tc.words {
				if !strings.Contains(ev.Detail, w) {
					t.Errorf("detail %q lacks %q", ev.Detail, w)
				}
			}
		})
	}
	// Without an inspect command nothing is said of the runtime's view,
	// and a refusal cannot be confirmed: it fails.
	rec, _ := fakeRuntime(t, []string{improper}, "")
	ev := RunReconcile(context.Background(), &Plan{Target: "x", Runtime: "podman", Reconcile: rec}, func(Event) {})
	if ev.Status != Fail || strings.Contains(ev.Detail, "says") {
		t.Errorf("no inspect: %s %q", ev.Status, ev.Detail)
	}
}
