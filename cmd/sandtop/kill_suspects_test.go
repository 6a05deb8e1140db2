package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
)

// TestKillNamesEscapedHelpers: a helper that double-forked out of a
// sandbox's tree and stays in a cgroup that does not name the sandbox is
// named in the plan, not signalled by kill --force, which then exits 1
// naming it; kill --with-cgroup takes it.
func TestKillNamesEscapedHelpers(t *testing.T) {
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "plain", Runtime: fleet.Containerd, Escape: true},
		{Name: "with", Runtime: fleet.Containerd, Escape: true},
	}})
	m := f.Manifest()
	escaped := map[string]fleet.Process{}
	for _, name := range []string{"plain", "with"} {
		sb := m.Sandbox(name)
		esc := sb.Role(fleet.RoleEscaped)[0]
		var pids []int
		for _, p := range sb.Processes {
			if slices.Equal(p.Argv, esc.Argv) {
				pids = append(pids, p.PID)
			}
		}
		fleettest.SharedCgroup(t, "kill-"+name, pids)
		escaped[name] = esc
	}
	audit := t.TempDir() + "/audit.jsonl"
	pid := func(name string) string { return strconv.Itoa(escaped[name].PID) }

	code, out, errOut := sandtop(t, "kill", "--dry-run", m.Sandbox("plain").ID)
	if code != 0 || !strings.Contains(out, "suspects (outside the tree, in its cgroups):\n  pid "+pid("plain")) || !strings.Contains(out, "--with-cgroup") {
		t.Errorf("dry run: exit %d, the escaped helper %s not named as a suspect:\n%s%s", code, pid("plain"), out, errOut)
	}

	// The JSON plan names the same suspect, with its evidence, not taken;
	// under --with-cgroup taken, and among the members.
	for _, with := range []bool{false, true} {
		args := []string{"kill", "--dry-run", "--json", m.Sandbox("plain").ID}
		if with {
			args = append(args, "--with-cgroup")
		}
		code, out, errOut = sandtop(t, args...)
		var p planJSON
		if code != 0 || json.Unmarshal([]byte(out), &p) != nil {
			t.Fatalf("%v: exit %d:\n%s%s", args, code, out, errOut)
		}
		i := slices.IndexFunc(p.Suspects, func(s planSuspect) bool { return s.PID == escaped["plain"].PID })
		if i < 0 || len(p.Suspects[i].Evidence) == 0 || p.Suspects[i].Taken != with || p.Suspects[i].Start != escaped["plain"].Start ||
			!strings.Contains(out, `"fate":`) {
			t.Errorf("%v: the escaped helper %s is not a suspect taken=%v with its evidence:\n%s", args, pid("plain"), with, out)
		}
		taken := slices.ContainsFunc(p.Members, func(m planMember) bool { return m.PID == escaped["plain"].PID && m.Suspect != "" })
		if taken != with {
			t.Errorf("%v: the suspect among the members: %v, want %v:\n%s", args, taken, with, out)
		}
	}

	code, out, errOut = sandtop(t, "kill", "--force", "--grace", "0", "--audit-log", audit, m.Sandbox("plain").ID)
	if code != exitFailure || !strings.Contains(out, pid("plain")+" "+escaped["plain"].Comm+" (suspected escape") {
		t.Errorf("kill --force: exit %d, want %d naming %s:\n%s%s", code, exitFailure, pid("plain"), out, errOut)
	}
	if !alive(escaped["plain"].Identity) {
		t.Errorf("the suspect %s in a cgroup not provably the sandbox's was signalled", pid("plain"))
	}

	code, out, errOut = sandtop(t, "kill", "--force", "--grace", "0", "--with-cgroup", "--audit-log", audit, m.Sandbox("with").ID)
	if code != 0 || alive(escaped["with"].Identity) {
		t.Errorf("kill --with-cgroup: exit %d, escaped helper alive %v:\n%s%s", code, alive(escaped["with"].Identity), out, errOut)
	}
}
