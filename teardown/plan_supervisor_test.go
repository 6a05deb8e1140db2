package teardown

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
)

// TestPlanSubtreeRefusesSocketSupervisor: a process that listens on the
// socket a live sandbox's shim names with -address is that sandbox's
// supervisor, whatever it is called and though no ancestry leads there
// (the shim's parent is PID 1): its subtree is refused and the refusal
// names the sandboxes. The listener is this test process, listening for
// real; the same process not listening is planned.
func TestPlanSubtreeRefusesSocketSupervisor(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "sup.sock")
	me := os.Getpid()
	view := func() *model.View {
		snap := modeltest.Snapshot(proc.Snapshot{Self: 1 << 30, Listeners: map[string]bool{sock: true}},
			modeltest.Proc(me, 1, "my-supervisord --serve"),
			modeltest.Proc(1<<29, 1, "/usr/bin/containerd-shim-runc-v2 -namespace team -id web -address "+sock),
			modeltest.Proc(1<<29+1, 1, "/usr/bin/containerd-shim-runc-v2 -namespace team -id db -address "+sock),
		)
		return model.Build(snap, model.Presets(), nil)
	}
	if _, err := PlanSubtree(view(), me, PlanOptions{ProcRoot: "/proc"}); err != nil {
		t.Fatalf("a process that listens on nothing is refused: %v", err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = PlanSubtree(view(), me, PlanOptions{ProcRoot: "/proc"})
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Reason != ReasonSupervisor {
		t.Fatalf("the listener on the shims' -address is planned: %v", err)
	}
	for _, want := range []string{"supervisor of 2 sandboxes", "team/web", "team/db"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
}
