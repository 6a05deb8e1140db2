package fleet

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteSummary prints a readable table of a running fleet.
func WriteSummary(w io.Writer, m *Manifest) error {
	fmt.Fprintf(w, "sandsim fleet %q: owner pid %d, %d sandboxes, %d processes\n",
		m.Scenario, m.Owner.PID, len(m.Sandboxes), len(m.Processes()))
	fmt.Fprintf(w, "files in %s", m.Base)
	if m.Cgroup != "" {
		fmt.Fprintf(w, ", cgroup %s", m.Cgroup)
	}
	if m.Freezer != "" {
		fmt.Fprintf(w, ", freezer %s", m.Freezer)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tRUNTIME\tID\tPROCS\tSTATE\tROOT\tSUPERVISOR")
	for i := range m.Sandboxes {
		s := &m.Sandboxes[i]
		sup := "-"
		if s.Supervisor != nil {
			sup = fmt.Sprintf("%s(%d)", s.Supervisor.Comm, s.Supervisor.PID)
		}
		root := s.Root()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s(%d)\t%s\n",
			s.Name, s.Runtime, shorten(s.ID, 16), len(s.Processes), state(s), root.Comm, root.PID, sup)
	}
	for _, b := range m.Bystanders {
		fmt.Fprintf(tw, "%s\t-\t-\t1\tbystander\t%s(%d)\t-\n", b.Role, b.Comm, b.PID)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range m.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for i := range m.Sandboxes {
		for _, n := range m.Sandboxes[i].Notes {
			fmt.Fprintf(w, "note: %s: %s\n", m.Sandboxes[i].Name, n)
		}
	}
	return nil
}

// state lists a sandbox's conditions the way sandtop's badges would.
func state(s *Sandbox) string {
	var out []string
	if s.Orphan {
		out = append(out, "orphan")
	}
	if z := len(s.Role(RoleZombie)); z > 0 {
		out = append(out, fmt.Sprintf("zombies:%d", z))
	}
	if s.Paused != NotPaused {
		out = append(out, "paused:"+string(s.Paused))
	}
	if s.PidNS {
		out = append(out, "pidns")
	}
	if len(out) == 0 {
		return "ok"
	}
	return strings.Join(out, ",")
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
