package ui

import (
	"cmp"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/teardown"
)

// kill starts the kill flow: K picks the targets, a Cmd plans them, the
// confirmation shows the plans, and a confirmed batch runs in a goroutine
// whose events stream back into the teardown log.
func (m *Model) kill() tea.Cmd {
	if m.killer == nil {
		m.setStatus("read-only mode: killing is disabled", true)
		return nil
	}
	if m.view == nil {
		return nil
	}
	ts := m.targets()
	if len(ts) == 0 {
		m.setStatus("nothing to kill here: select a sandbox or a process", true)
		return nil
	}
	return planCmd(m.killer, m.view, ts, m.grace)
}

// targets are what K would tear down: the tagged items, else the selected
// sandbox, else the selected process's subtree.
func (m *Model) targets() []Target {
	var out []Target
	taken := map[rowKey]bool{}
	for i := range m.table.rows { // tagged rows, in screen order
		if k := m.table.rows[i].key; m.tags[k] {
			out = append(out, targetOf(k))
			taken[k] = true
		}
	}
	// Tags hidden by a filter or a collapsed sandbox still count.
	var hidden []rowKey
	for k := range m.tags {
		if !taken[k] {
			hidden = append(hidden, k)
		}
	}
	slices.SortFunc(hidden, func(a, b rowKey) int {
		return cmp.Or(strings.Compare(a.sandbox, b.sandbox), cmp.Compare(a.id.PID, b.id.PID))
	})
	for _, k := range hidden {
		out = append(out, targetOf(k))
	}
	if len(out) > 0 {
		return dropCovered(out, m.view)
	}
	if r := m.table.selected(); r != nil && r.kind != rowHost {
		return []Target{targetOf(r.key)}
	}
	return nil
}

func targetOf(k rowKey) Target {
	if k.isProcess() {
		return Target{Process: k.id}
	}
	return Target{Sandbox: k.sandbox}
}

// dropCovered removes process targets inside a sandbox that is a target
// itself: its teardown takes them anyway.
func dropCovered(ts []Target, v *model.View) []Target {
	whole := map[string]bool{}
	for _, t := range ts {
		if t.Sandbox != "" {
			whole[t.Sandbox] = true
		}
	}
	out := ts[:0]
	for _, t := range ts {
		if t.Sandbox == "" {
			if sb := v.SandboxOf(t.Process); sb != nil && whole[sb.Key()] {
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

// openConfirm shows the plans, minus any target a running teardown holds.
func (m *Model) openConfirm(msg plansMsg) {
	var plans []*teardown.Plan
	for _, p := range msg.plans {
		if m.overlapsBusy(p) {
			msg.errs = append(msg.errs, p.Target+": already being torn down")
			continue
		}
		plans = append(plans, p)
	}
	msg.plans = plans
	if len(plans) == 0 {
		m.setStatus("nothing to tear down: "+strings.Join(msg.errs, "; "), true)
		return
	}
	m.confirm = newConfirm(m.styles, msg, m.grace, m.euid)
	m.mode = modeConfirm
}

func (m *Model) overlapsBusy(p *teardown.Plan) bool {
	for _, mb := range p.Members {
		if _, ok := m.busy[mb.Identity]; ok {
			return true
		}
	}
	return false
}

// confirmKey drives the kill confirmation.
func (m *Model) confirmKey(msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, m.keys.ForceQuit) {
		m.closeConfirm()
		return m.quit(msg)
	}
	res, cmd := m.confirm.update(msg)
	switch res {
	case confirmCancelled:
		m.closeConfirm()
		m.setStatus("cancelled: nothing was signalled", false)
	case confirmAccepted:
		plans := m.confirm.plans
		m.closeConfirm()
		return m.startBatch(plans)
	}
	return cmd
}

// closeConfirm leaves the confirmation and shows the newest scan, which
// was held while it was open.
func (m *Model) closeConfirm() {
	m.mode, m.confirm = modeNormal, nil
	if m.pending != nil {
		m.apply(*m.pending)
		m.pending = nil
	}
}

// startBatch runs confirmed plans: the engine goes in a goroutine started
// by a Cmd, and a second Cmd waits on its channel (re-armed per message).
func (m *Model) startBatch(plans []*teardown.Plan) tea.Cmd {
	// A teardown that started since the plans were made may hold some of
	// their processes now.
	plans = slices.DeleteFunc(plans, m.overlapsBusy)
	if len(plans) == 0 {
		m.setStatus("already being torn down", true)
		return nil
	}
	m.nextBatch++
	b := &batch{id: m.nextBatch, plans: plans, ch: make(chan tea.Msg, 64), endGrace: make(chan struct{})}
	m.batches[b.id] = b
	for _, p := range plans {
		for _, mb := range p.Members {
			m.busy[mb.Identity] = b.id
		}
		if p.Sandbox != nil {
			delete(m.tags, rowKey{sandbox: p.Key})
		} else if len(p.Members) > 0 {
			root := p.Root().Identity
			for k := range m.tags {
				if k.id == root {
					delete(m.tags, k)
				}
			}
		}
	}
	return tea.Batch(m.panel.begin(plans), runBatchCmd(m.runs, m.killer, b), waitBatchCmd(b))
}

// killNow ends the grace of every running teardown: SIGKILL now, as the
// CLI's first Ctrl-C does. Verify, cleanup and the audit record follow.
func (m *Model) killNow() {
	if len(m.batches) == 0 {
		m.setStatus("no teardown is running", true)
		return
	}
	for _, b := range m.batches {
		b.cutGrace()
	}
	m.setStatus("grace cut short: SIGKILL now; verify and the audit record follow", false)
}

func (m *Model) rearm(id int) tea.Cmd {
	if b := m.batches[id]; b != nil {
		return waitBatchCmd(b)
	}
	return nil
}

// batchDone frees the batch's targets and refreshes at once, so the
// operator sees the torn-down sandboxes go.
func (m *Model) batchDone(id int) tea.Cmd {
	delete(m.batches, id)
	for ident, b := range m.busy {
		if b == id {
			delete(m.busy, ident)
		}
	}
	m.panel.batchDone()
	if m.panel.running == 0 {
		m.quitArmed = false
	}
	return m.refreshNow()
}
