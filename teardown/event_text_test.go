package teardown

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEventTextAligns: whatever the step, what it acted on (or the detail
// of a step about the whole target) starts in the same column, and no
// colon hangs after a step name.
func TestEventTextAligns(t *testing.T) {
	evs := []Event{
		{Step: StepPlan, Detail: "3 processes"},
		{Step: StepTerm, PID: 42, Comm: "sleep", Signal: "SIGTERM"},
		{Step: StepCgroupKill, Detail: "killed every process in /x"},
		{Step: StepKill, PID: 99, Comm: "app", Error: "EPERM", Detail: "needs root"},
		{Step: StepVerify, Detail: "fresh scan: nothing of x remains"},
	}
	col := -1
	for _, ev := range evs {
		text := ev.Text()
		rest := strings.TrimLeft(text[len(ev.Step):], " ")
		at := len(text) - len(rest)
		if col < 0 {
			col = at
		}
		if at != col {
			t.Errorf("%q: text starts at column %d, want %d", text, at, col)
		}
		if strings.HasPrefix(rest, ":") {
			t.Errorf("%q: a colon after the step name", text)
		}
	}
	if got := evs[3].Text(); !strings.HasSuffix(got, "99 app: EPERM (needs root)") {
		t.Errorf("failure text %q", got)
	}
}

// TestTotalsSurvivorsNeverNull: the audit log and the JSON events write
// "survivors": [] when nothing survived.
func TestTotalsSurvivorsNeverNull(t *testing.T) {
	b, err := json.Marshal(Totals{Killed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"survivors":[]`) {
		t.Errorf("totals %s", b)
	}
}
