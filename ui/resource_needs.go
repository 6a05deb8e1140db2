package ui

import (
	"maps"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// resourceNeeds is what the next scan must read for this screen: of the
// sandboxes' cgroups, the IO and pressure figures while their columns are
// shown, of the rows on screen and a page either side (of every sandbox
// while the rows are in their order), every figure of the sandbox in the
// detail pane, and nothing else (a Watch reads what its badges need
// anyway); of their processes, nothing for the sake of figures no row
// shows (Shown, Open: see model.SettledCgroups). Each file not read is a
// read saved per dedicated cgroup or process per refresh: at a thousand
// sandboxes, most of the screen's cgroup reads and an eighth of its stat
// reads.
func (m *Model) resourceNeeds() model.ResourceNeeds {
	n := model.ResourceNeeds{Figures: model.BadgeFigures}
	for _, c := range m.table.cols {
		switch c.id {
		case colIO:
			n.Figures |= proc.HaveIO
		case colPressure:
			n.Figures |= proc.HavePressureCPU | proc.HavePressureMemory | proc.HavePressureIO
		}
	}
	switch m.table.sort {
	case sortIO:
		n.Figures |= proc.HaveIO
	case sortPressure:
		n.Figures |= proc.HavePressureCPU | proc.HavePressureMemory | proc.HavePressureIO
	case sortMem:
		// Every member's memory orders the rows.
	case sortCPU:
		n.CPUOrder = true
		n.Shown = m.table.nearKeys()
		n.Open = maps.Clone(m.expanded)
	default:
		n.Shown = m.table.nearKeys()
		n.Open = maps.Clone(m.expanded)
	}
	if r := m.table.selected(); m.showDetail && r != nil && r.sb != nil {
		n.Full = map[string]bool{r.sb.Key(): true}
	}
	return n
}
