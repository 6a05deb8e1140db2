package ui

import (
	"fmt"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
	"github.com/sandtop/sandtop/ui/format"
)

// A teardown is done when nothing of its sandbox is left. Its runtime may
// then start the sandbox again by itself, under the same ID (a Docker or
// Kubernetes restart policy, a systemd unit's Restart=): the log would end
// on "0 survivors" above a row that is back. So the log watches each
// sandbox it tore down for as long as it is open, and says so when one
// comes back.

// comeback is a torn-down sandbox the log watches.
type comeback struct {
	key, target string
	// had is every process the plan knew under the sandbox (its members
	// and suspects): only a process outside it is one that started since.
	// A view scanned before the teardown ended still shows some of them.
	had map[proc.Identity]bool
}

// comebackOf is what the log watches after p's teardown, nil when there is
// nothing to watch: a process subtree has no sandbox to come back, and a
// teardown that left survivors already says the sandbox lives.
func comebackOf(p *teardown.Plan, t teardown.Totals) *comeback {
	if p.Key == "" || len(t.Survivors) > 0 {
		return nil
	}
	c := &comeback{key: p.Key, target: p.Target, had: make(map[proc.Identity]bool, len(p.Members)+len(p.Suspects))}
	for _, m := range p.Members {
		c.had[m.Identity] = true
	}
	for _, s := range p.Suspects {
		c.had[s.Identity] = true
	}
	return c
}

// comebacks says, for each watched sandbox that v shows with a process
// that started since its teardown, that it came back, and stops watching
// it.
func (p *teardownPanel) comebacks(v *model.View) {
	if v == nil {
		return
	}
	kept := p.watched[:0]
	for _, c := range p.watched {
		sb := v.Sandbox(c.key)
		var fresh []*model.Member
		if sb != nil {
			for _, m := range sb.Members {
				if !m.Zombie() && !c.had[m.ID()] {
					fresh = append(fresh, m)
				}
			}
		}
		if len(fresh) == 0 {
			kept = append(kept, c)
			continue
		}
		p.cameBack++
		first := fmt.Sprintf("pid %d %s", fresh[0].PID, fresh[0].Comm)
		if len(fresh) > 1 {
			first += fmt.Sprintf(" and %s", format.Count(len(fresh)-1, "more", "more"))
		}
		p.add(p.logLine(teardown.Fail, c.target, p.styles.Error.Render(format.Printable(
			"came back after its teardown: "+first+" started since; its runtime starts it again by itself (a restart policy?): stop it through the runtime"))))
	}
	clear(p.watched[len(kept):])
	p.watched = kept
}
