package ui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sandtop/sandtop/model"
)

// network describes the sandbox's network namespaces and what listens
// in each: the namespace's sockets, not matched to the members' own
// (which would take a walk of every member's descriptors), so they are
// said to be "in its network namespace"; of the host's namespace, none.
func (d detail) network(sb *model.Sandbox, c *rowCtx, add func(k, v string)) {
	for _, n := range c.view.Network(sb) {
		ns := "inode " + strconv.FormatUint(n.Ino, 10)
		if n.Name != "" {
			ns = n.Name + " (" + ns + ")"
		}
		if n.Host {
			add("netns", "the host's ("+ns+"): its listeners are not the sandbox's")
			continue
		}
		add("netns", ns)
		var ls []string
		for _, l := range n.Listeners {
			ls = append(ls, l.Proto+" "+l.Addr)
		}
		text := "nothing"
		if len(ls) > 0 {
			text = strings.Join(ls, ", ")
		}
		text += " in its network namespace"
		if n.Err != "" {
			text += fmt.Sprintf(" (not all read: %s)", n.Err)
		}
		add("listening", text)
	}
}
