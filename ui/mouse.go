package ui

import tea "github.com/charmbracelet/bubbletea"

// wheelStep is how many rows one notch of the wheel scrolls, as in htop.
const wheelStep = 3

// mouse answers the mouse as htop does: a click on a row selects it, a
// click on a column title sorts by that column (again: reversed), the
// wheel scrolls the list, or the teardown log when over it. Clicks mean
// nothing while a dialog or a text field is open.
func (m *Model) mouse(msg tea.MouseMsg) {
	if m.mode != modeNormal || m.tooSmall() || m.help.ShowAll {
		return
	}
	// The table's column titles are the line under the header; its rows
	// follow.
	titleY := headerHeight
	tableEnd := titleY + 1 + m.table.height
	overPanel := m.panelH > 0 && msg.Y >= tableEnd+m.detailH && msg.Y < tableEnd+m.detailH+m.panelH
	switch msg.Button {
	case tea.MouseButtonWheelUp, tea.MouseButtonWheelDown:
		if msg.Action != tea.MouseActionPress {
			return
		}
		d := wheelStep
		if msg.Button == tea.MouseButtonWheelUp {
			d = -d
		}
		if overPanel {
			if d < 0 {
				m.panel.vp.ScrollUp(-d)
			} else {
				m.panel.vp.ScrollDown(d)
			}
			return
		}
		m.table.move(d)
	case tea.MouseButtonLeft:
		if msg.Action != tea.MouseActionRelease {
			return
		}
		switch {
		case msg.Y == titleY:
			c, ok := m.table.columnAt(msg.X)
			if !ok {
				return
			}
			if c.sort == m.sort {
				m.reverse = !m.reverse
			} else {
				m.sort, m.reverse = c.sort, false
			}
			m.rebuild()
			m.setStatus("sorted by "+m.sortName(), false)
		case msg.Y > titleY && msg.Y < tableEnd:
			if i := m.table.offset + msg.Y - titleY - 1; i < len(m.table.rows) {
				m.table.cursor = i
				m.table.clamp()
			}
		}
	}
}
