package model

import (
	"slices"
	"testing"

	"github.com/sandtop/sandtop/proc"
)

// TestDocumentNamesUnreadable: "1 process partly unreadable" can be
// followed up, by the list of pids and by a field on each process.
func TestDocumentNamesUnreadable(t *testing.T) {
	partial := func(p *proc.Process) { p.Partial = true }
	s := snap(
		pr(300, 1, "sim --sandbox ffff0000"),
		pr(301, 300, "worker", partial),
		pr(500, 1, "vim notes", partial),
	)
	s.PartlyUnreadable = 2
	d := Build(s, rules, nil).Document(true)
	if !slices.Equal(d.PartlyUnreadablePIDs, []int{301, 500}) || d.PartlyUnreadable != 2 {
		t.Errorf("partly_unreadable %d, pids %v; want 2, [301 500]", d.PartlyUnreadable, d.PartlyUnreadablePIDs)
	}
	for _, p := range d.Sandboxes[0].Processes {
		if p.PartlyUnreadable != (p.PID == 301) {
			t.Errorf("pid %d: partly_unreadable %v", p.PID, p.PartlyUnreadable)
		}
	}
	if d := Build(snap(), rules, nil).Document(false); d.PartlyUnreadablePIDs == nil {
		t.Error("partly_unreadable_pids is null, want []")
	}
}
