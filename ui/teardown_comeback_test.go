package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/teardown"
)

// orphanBack is the orphaned vm0 sandbox started again under its ID: new
// processes, the old ones gone.
func orphanBack(prev *model.View, at time.Duration) *model.View {
	return rebuilt(prev, at, []int{210, 211},
		pr(620, 1, time.Second, "/usr/bin/firecracker --api-sock /run/vm0/sock/"+idOrphan+"/api.sock"),
		pr(621, 620, time.Second, "/usr/bin/vsock-proxy --port 53"))
}

// TestLogSaysWhenASandboxComesBack: a runtime with a restart policy starts
// a sandbox again under its ID once sandtop has torn it down. The log
// says so when a view shows a process of it that started since the
// teardown; a view scanned before the teardown ended (its killed
// processes still in it), one without the sandbox, a subtree's teardown
// and a teardown that left survivors say nothing.
func TestLogSaysWhenASandboxComesBack(t *testing.T) {
	views := fleetViews(1)
	gone := rebuilt(views[0], time.Second, []int{210, 211})
	back := orphanBack(gone, 2*time.Second)
	plan, err := teardown.PlanSandbox(views[0], views[0].Sandbox("vm0:"+idOrphan), teardown.PlanOptions{Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := teardown.PlanSubtree(views[0], 210, teardown.PlanOptions{Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	survivor := teardown.Totals{Survivors: []teardown.Survivor{{PID: 211, Comm: "vsock-proxy"}}}
	if comebackOf(sub, teardown.Totals{}) != nil || comebackOf(plan, survivor) != nil {
		t.Errorf("a subtree's teardown, or one with survivors, is watched")
	}

	m := newTestModel(t, &fakeSource{views: views}, &fakeKiller{})
	p := &m.panel
	p.open = true
	p.planDone(teardownPlanDoneMsg{target: plan.Target, comeback: comebackOf(plan, teardown.Totals{Killed: 2})})
	for _, v := range []*model.View{views[0], gone} {
		p.comebacks(v)
	}
	if p.cameBack != 0 || len(p.watched) != 1 {
		t.Fatalf("before it came back: %d came back, %d watched; log:\n%s", p.cameBack, len(p.watched), strings.Join(p.lines, "\n"))
	}
	p.comebacks(back)
	p.comebacks(orphanBack(back, 3*time.Second)) // said once
	log := ansi.Strip(strings.Join(p.lines, "\n"))
	if p.cameBack != 1 || len(p.watched) != 0 || strings.Count(log, "came back") != 1 ||
		!strings.Contains(log, "[FAIL] "+short(plan.Target)+"  came back after its teardown: pid 620 firecracker and 1 more started since") {
		t.Errorf("after it came back: %d came back, %d watched; log:\n%s", p.cameBack, len(p.watched), log)
	}
	p.setSize(120, 10)
	if title := ansi.Strip(p.view()); !strings.Contains(title, "teardown finished, 1 came back") {
		t.Errorf("title: %s", title)
	}
	p.close()
	if p.cameBack != 0 || p.watched != nil {
		t.Errorf("a closed log still watches: %d, %v", p.cameBack, p.watched)
	}
}

// TestProgramLogSaysWhenASandboxComesBack wires it through the program:
// the refresh after the teardown finds the sandbox back.
func TestProgramLogSaysWhenASandboxComesBack(t *testing.T) {
	views := fleetViews(1)
	src := &fakeSource{views: []*model.View{views[0], orphanBack(views[0], time.Second)}}
	m := newTestModel(t, src, &fakeKiller{})
	tm := startProgram(t, m)
	send(tm, "j", "K")
	waitFor(t, tm, "Tear down sandbox "+idOrphan)
	send(tm, "y")
	waitFor(t, tm, "teardown finished, 1 came back", "came back after its teardown")
	_ = finalModel(t, tm)
}
