package ui

import (
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/teardown"
)

// tickMsg asks for a refresh. gen identifies the tick chain: a tick from a
// chain that `r` or an interval change replaced is dropped, so exactly one
// chain is ever alive.
type tickMsg struct{ gen int }

// viewMsg carries a finished scan.
type viewMsg struct {
	view *model.View
	err  error
	// users maps every uid of the view to a name; it is a new map, never
	// written after it is sent.
	users map[int]string
	// rec is the recording's state when the source records.
	rec *RecordingState
}

// plansMsg carries the plans for a kill, made from view.
type plansMsg struct {
	view  *model.View
	plans []*teardown.Plan
	// errs are targets that cannot be planned (gone, or refused).
	errs []string
}

// teardownEventMsg is one step of a running teardown.
type teardownEventMsg struct {
	batch int
	ev    teardown.Event
}

// teardownPlanDoneMsg says one plan of a batch finished and was audited.
type teardownPlanDoneMsg struct {
	batch    int
	target   string
	totals   teardown.Totals
	auditErr error
	audit    string
	// comeback is what the log then watches for (see comeback).
	comeback *comeback
}

// teardownBatchDoneMsg says every plan of a batch finished.
type teardownBatchDoneMsg struct{ batch int }
