package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc/proctest"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
)

// envRunArgs makes the test binary run sandtop itself: its value is the
// arguments as a JSON array. Tests use it to run sandtop as another user.
const envRunArgs = "SANDTOP_TEST_RUN_ARGS"

// TestMain lets the test binary serve as the sandsim fleet's processes and
// reap whatever a fleet strands, or as sandtop itself (envRunArgs); it
// removes the sandtop binary the tests built.
func TestMain(m *testing.M) {
	if env, ok := os.LookupEnv(envRunArgs); ok {
		var args []string
		if err := json.Unmarshal([]byte(env), &args); err != nil {
			fmt.Fprintln(os.Stderr, envRunArgs+":", err)
			os.Exit(exitUsage)
		}
		code := run(args, os.Stdin, os.Stdout, os.Stderr)
		if _, ok := os.LookupEnv(envReportHWM); ok {
			reportHWM()
		}
		os.Exit(code)
	}
	if n, err := strconv.Atoi(os.Getenv(envThreads)); err == nil {
		holdThreads(n)
	}
	fleet.Main(cleanRun{m})
}

type cleanRun struct{ m *testing.M }

func (c cleanRun) Run() int {
	defer removeBinary()
	return c.m.Run()
}

// sandtop runs the command in-process and returns its exit code and output.
func sandtop(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func listJSON(t *testing.T, args ...string) model.Document {
	t.Helper()
	code, out, errOut := sandtop(t, append([]string{"list", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("list --json: exit %d: %s", code, errOut)
	}
	var doc model.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("list --json output is not a Document: %v\n%s", err, out)
	}
	return doc
}

func find(doc model.Document, id string) *model.SandboxJSON {
	for i := range doc.Sandboxes {
		if doc.Sandboxes[i].ID == id {
			return &doc.Sandboxes[i]
		}
	}
	return nil
}

func alive(id proc.Identity) bool {
	got, st, err := proc.ReadIdentity("/proc", id.PID)
	return err == nil && got.Start == id.Start && st != 'Z'
}

// TestListJSONFleet checks grouping and every badge against real process
// trees: members, roots, supervisors, badges and dedicated cgroups.
func TestListJSONFleet(t *testing.T) {
	m := fleettest.Start(t, fleet.Spec{
		Sandboxes: []fleet.SandboxSpec{
			{Name: "vm-managed", Runtime: fleet.VM0},
			{Name: "vm-orphan", Runtime: fleet.VM0, Orphan: true},
			{Name: "box", Runtime: fleet.Boxlite, Detached: true},
			{Name: "cube-paused", Runtime: fleet.Cube, Pause: fleet.PauseFreeze},
			{Name: "zombies", Runtime: fleet.Containerd, Zombies: 2},
			{Name: "escape", Runtime: fleet.Docker, Escape: true},
			{Name: "shared", Runtime: fleet.Cube},
			{Name: "stopped", Runtime: fleet.Docker, Pause: fleet.PauseStop},
		},
		Bystanders: []fleet.BystanderSpec{{Role: "cgroup-mate", Argv: []string{"cgroup-mate"}, CgroupOf: "shared"}},
	}).Manifest()
	doc := listJSON(t)
	tests := []struct {
		name      string
		runtime   string
		badges    []model.Badge
		dedicated bool
		check     func(t *testing.T, sb *model.SandboxJSON, ms *fleet.Sandbox)
	}{
		{"vm-managed", "vm0", nil, false, func(t *testing.T, sb *model.SandboxJSON, ms *fleet.Sandbox) {
			if sb.SupervisorPID != ms.Supervisor.PID {
				t.Errorf("supervisor_pid %d, want the runner %d", sb.SupervisorPID, ms.Supervisor.PID)
			}
		}},
		{"vm-orphan", "vm0", []model.Badge{model.BadgeOrphan}, false, func(t *testing.T, sb *model.SandboxJSON, _ *fleet.Sandbox) {
			if sb.SupervisorPID != 0 || !strings.Contains(sb.Supervisor, "no ancestor") {
				t.Errorf("supervisor %d %q", sb.SupervisorPID, sb.Supervisor)
			}
		}},
		{"box", "boxlite", nil, true, nil},
		{"cube-paused", "cube", []model.Badge{model.BadgePaused}, true, func(t *testing.T, sb *model.SandboxJSON, _ *fleet.Sandbox) {
			if !sb.Frozen {
				t.Error("frozen false")
			}
		}},
		{"zombies", "containerd", []model.Badge{model.BadgeZombie}, true, func(t *testing.T, sb *model.SandboxJSON, _ *fleet.Sandbox) {
			z := 0
			for _, p := range sb.Processes {
				if p.Zombie {
					z++
				}
			}
			if z != 2 {
				t.Errorf("%d zombies listed, want 2", z)
			}
		}},
		// Its containerd lives: an escaped child is no orphan.
		{"escape", "docker", nil, true, func(t *testing.T, sb *model.SandboxJSON, ms *fleet.Sandbox) {
			for _, e := range ms.Role(fleet.RoleEscaped) {
				for _, p := range sb.Processes {
					if p.PID == e.PID && !p.Escaped {
						t.Errorf("escaped %d not marked escaped", p.PID)
					}
				}
			}
		}},
		{"shared", "cube", nil, false, nil},
		{"stopped", "docker", []model.Badge{model.BadgePaused}, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ms := m.Sandbox(tc.name)
			sb := find(doc, ms.ID)
			if sb == nil {
				t.Fatalf("sandbox %s (%s) not listed", tc.name, ms.ID)
			}
			if sb.Runtime != tc.runtime || !slices.Equal(sb.Badges, append([]model.Badge{}, tc.badges...)) {
				t.Errorf("runtime %q badges %v, want %q %v", sb.Runtime, sb.Badges, tc.runtime, tc.badges)
			}
			if (sb.Cgroup != "") != tc.dedicated || (tc.dedicated && sb.Cgroup != ms.Cgroup) {
				t.Errorf("cgroup %q, want dedicated=%v (%s)", sb.Cgroup, tc.dedicated, ms.Cgroup)
			}
			var got, want []int
			for _, p := range sb.Processes {
				got = append(got, p.PID)
			}
			for _, p := range ms.Processes {
				want = append(want, p.PID)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("members %v, want %v", got, want)
			}
			if sb.RootPID != ms.Root().PID || sb.Processes[0].PID != sb.RootPID {
				t.Errorf("root %d (first listed %d), want %d", sb.RootPID, sb.Processes[0].PID, ms.Root().PID)
			}
			if tc.check != nil {
				tc.check(t, sb, ms)
			}
		})
	}
	for _, b := range m.Bystanders {
		for _, sb := range doc.Sandboxes {
			for _, p := range sb.Processes {
				if p.PID == b.PID {
					t.Errorf("bystander %s (%d) listed in sandbox %s", b.Role, b.PID, sb.ID)
				}
			}
		}
	}
}

// TestListNeverShowsPID1OrSandtop: PID 1 here is the machine's agent, whose
// argv mentions firecracker; neither it nor sandtop is ever a sandbox.
func TestListNeverShowsPID1OrSandtop(t *testing.T) {
	doc := listJSON(t, "--all")
	for _, sb := range doc.Sandboxes {
		for _, p := range sb.Processes {
			if p.PID == 1 || p.PID == os.Getpid() {
				t.Errorf("pid %d listed in sandbox %s", p.PID, sb.ID)
			}
		}
	}
	if doc.Unattributed != len(doc.UnattributedProcesses) || doc.Unattributed == 0 {
		t.Errorf("unattributed %d, listed %d", doc.Unattributed, len(doc.UnattributedProcesses))
	}
}

// TestListFixture runs list on a fixture /proc tree: deterministic output
// for odd contents a live host cannot produce.
func TestListFixture(t *testing.T) {
	root := proctest.Fixture(t, filepath.Join("..", "..", "proc", "testdata", "host"))
	code, out, errOut := sandtop(t, "list", "--all", "--tree", "--proc-root", filepath.Join(root, "proc"), "--sys-root", filepath.Join(root, "sys"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"ID", "RUNTIME", "BADGES", "(host)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour escapes in piped output")
	}
}

func TestRulesCommand(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[[rule]]\nname = \"x\"\nargv = '(?P<id>[a-z]+'\n"), 0o644)
	code, _, errOut := sandtop(t, "rules", "--check", bad)
	if code != exitFailure || !strings.Contains(errOut, "bad.toml:3") || !strings.Contains(errOut, `"argv"`) {
		t.Errorf("rules --check bad: exit %d, %q; want exit 1 naming line 3 and the key", code, errOut)
	}
	code, out, _ := sandtop(t, "rules")
	if code != 0 {
		t.Fatalf("rules: exit %d", code)
	}
	printed := filepath.Join(dir, "printed.toml")
	os.WriteFile(printed, []byte(out), 0o644)
	if code, out, errOut := sandtop(t, "rules", "--check", printed); code != 0 || !strings.Contains(out, "OK") {
		t.Errorf("the printed rules do not check: exit %d %s %s", code, out, errOut)
	}
	// A broken rules file stops every command, not just rules --check.
	if code, _, errOut := sandtop(t, "list", "--rules", bad); code != exitUsage || !strings.Contains(errOut, "bad.toml:3") {
		t.Errorf("list with a broken rules file: exit %d %q", code, errOut)
	}
}

// TestKillCommand covers resolution, confirmation, dry runs, the event
// stream, exit codes and the audit log, on a real fleet.
func TestKillCommand(t *testing.T) {
	// The IDs are this run's own: the same test runs at once in other
	// checkouts, and a sandbox is named by its ID. They share a prefix,
	// for the ambiguous-prefix case.
	prefix := fmt.Sprintf("%012x", rand.Uint64()>>16)
	idA := prefix + strings.Repeat("0", 50) + "a1"
	idB := prefix + strings.Repeat("0", 50) + "b2"
	m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "a", Runtime: fleet.Containerd, ID: idA},
		{Name: "b", Runtime: fleet.Containerd, ID: idB},
		{Name: "vm", Runtime: fleet.VM0},
	}}).Manifest()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	stillAlive := func(name string) {
		t.Helper()
		for _, p := range m.Sandbox(name).Processes {
			if !alive(p.Identity) && p.Role != fleet.RoleZombie {
				t.Fatalf("%s: %d %s is gone, but nothing should have been signalled", name, p.PID, p.Comm)
			}
		}
	}
	for _, tc := range []struct {
		name, errHas string
		args         []string
		code         int
	}{
		{"unknown ID", `no sandbox ID starts with "ffffdead"`, []string{"kill", "--force", "ffffdead"}, exitUsage},
		{"ambiguous prefix lists the candidates", "ambiguous; candidates:\n  k8s.io/" + idA, []string{"kill", "--force", prefix}, exitUsage},
		{"empty argument", "empty sandbox ID", []string{"kill", "--force", ""}, exitUsage},
		{"one bad ID stops them all", "no sandbox ID", []string{"kill", "--force", idA, "ffffdead"}, exitUsage},
		{"no terminal without --force", "use --force", []string{"kill", idA}, exitUsage},
		{"no target", "needs a sandbox ID", []string{"kill"}, exitUsage},
		{"the supervisor is refused", "supervisor of sandbox", []string{"kill", "--force", "--pid", strconv.Itoa(m.Sandbox("vm").Supervisor.PID)}, exitUsage},
		{"pid 1 is refused", "refused pid 1", []string{"kill", "--force", "--pid", "1"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := sandtop(t, append(tc.args, "--audit-log", audit)...)
			if code != tc.code || !strings.Contains(errOut, tc.errHas) {
				t.Errorf("exit %d, stderr %q; want exit %d containing %q", code, errOut, tc.code, tc.errHas)
			}
			for _, n := range []string{"a", "b", "vm"} {
				stillAlive(n)
			}
		})
	}
	t.Run("dry run prints the plan and signals nothing", func(t *testing.T) {
		code, out, _ := sandtop(t, "kill", "--dry-run", idA[:len(idA)-1]+"1")
		if code != 0 || !strings.Contains(out, "target:     sandbox k8s.io/"+idA) || !strings.Contains(out, "steps:") {
			t.Errorf("exit %d:\n%s", code, out)
		}
		stillAlive("a")
	})
	t.Run("force with JSON events tears down, exits 0 and audits", func(t *testing.T) {
		code, out, errOut := sandtop(t, "kill", "--force", "--json", "--grace", "1s", "--audit-log", audit, idA[:63])
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errOut, out)
		}
		var last teardown.Event
		steps := map[teardown.Step]bool{}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
				t.Fatalf("not a JSON event line: %q", sc.Text())
			}
			steps[last.Step] = true
		}
		if last.Step != teardown.StepDone || last.Totals == nil || !last.Totals.OK() {
			t.Errorf("last event %+v, want a successful done", last)
		}
		for _, s := range []teardown.Step{"plan", "pin", "term", "wait", "verify", "cleanup", "done"} {
			if !steps[s] {
				t.Errorf("no %s event", s)
			}
		}
		for _, p := range m.Sandbox("a").Processes {
			if alive(p.Identity) {
				t.Errorf("%d %s survived", p.PID, p.Comm)
			}
		}
		stillAlive("b")
		stillAlive("vm")
		b, err := os.ReadFile(audit)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var rec teardown.AuditRecord
		if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rec) != nil || rec.ID != idA || rec.Target != "k8s.io/"+idA || rec.Key != "containerd:k8s.io/"+idA || rec.Via != "kill" || len(rec.Members) == 0 {
			t.Errorf("audit log: %q", b)
		}
	})
	t.Run("plain lines", func(t *testing.T) {
		code, out, _ := sandtop(t, "kill", "--force", "--grace", "0", "--audit-log", audit, "--pid", strconv.Itoa(m.Sandbox("vm").Root().PID))
		if code != 0 || !strings.Contains(out, "[OK]   kill") || !strings.Contains(out, "[OK]   done") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
}

// TestRulesHelpExample keeps the worked example in `sandtop help rules`
// true: it is cut out of the help text, checked, and matched.
func TestRulesHelpExample(t *testing.T) {
	long := newRulesCmd(&globals{}).Long
	i := strings.Index(long, "  [[rule]]")
	if i < 0 {
		t.Fatal("no example in the rules help")
	}
	var lines []string
	for _, l := range strings.Split(long[i:], "\n") {
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	rules, err := model.ParseRules([]byte(strings.Join(lines, "\n")), "help-example.toml")
	if err != nil || len(rules) != 1 {
		t.Fatalf("the help's example does not parse: %v", err)
	}
	m, ok := rules.Match(&proc.Process{Argv: []string{"/usr/bin/agentbox", "--box", "b-17"}})
	if !ok || m.ID != "b-17" {
		t.Fatalf("the help's example does not match its own runtime: %+v %v", m, ok)
	}
	if paths, err := m.CleanupPaths(); err != nil || !slices.Equal(paths, []string{"/var/lib/agentbox/b-17"}) {
		t.Errorf("cleanup %v %v", paths, err)
	}
}

// Every command's --help carries an example.
func TestEveryCommandHasAnExample(t *testing.T) {
	root := newRootCmd()
	initCompletion(root)
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Hidden {
			continue
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("sandtop %s --help has no example", c.Name())
		}
	}
}

// TestKillNeverTakesARuntimeName: on a fleet holding one sandbox of each of
// a few runtimes, a runtime's name, a namespace, "runtime:" (what
// "vm0:$ID" is with an empty $ID) and "ns/" are usage errors that say what
// the word is, and nothing is planned or signalled; completion offers no
// sandbox for them.
func TestKillNeverTakesARuntimeName(t *testing.T) {
	m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "kata", Runtime: fleet.Kata},
		{Name: "vm", Runtime: fleet.VM0},
		{Name: "jail", Runtime: fleet.Jailer},
		{Name: "docker", Runtime: fleet.Docker},
	}}).Manifest()
	g := &globals{procRoot: "/proc", sysRoot: "/sys"}
	for _, w := range []string{"kata", "firecracker", "vm0", "vm0:", "docker", "moby", "moby/", "docker:moby/", "kata:"} {
		t.Run(w, func(t *testing.T) {
			code, out, errOut := sandtop(t, "kill", "--dry-run", w)
			if code != exitUsage || !strings.Contains(errOut, "not a sandbox") || strings.Contains(out, "target:") {
				t.Errorf("kill --dry-run %q: exit %d, stdout %q, stderr %q; want exit %d naming what the word is", w, code, out, errOut, exitUsage)
			}
			if got := completeIDs(g, nil, w); len(got) > 0 {
				t.Errorf("completion of %q offers %q", w, got)
			}
		})
	}
	for _, name := range []string{"kata", "vm", "jail", "docker"} {
		for _, p := range m.Sandbox(name).Processes {
			if !alive(p.Identity) && p.Role != fleet.RoleZombie {
				t.Errorf("%s: %d %s is gone", name, p.PID, p.Comm)
			}
		}
	}
}

// TestKillRefusesSupervisors: every kind of process the presets know live
// sandboxes depend on is refused as a --pid target (exit 2), and the
// refusal names the sandboxes that depend on it: the vm0 runner (an
// ancestor), containerd and the Cubelet (listeners on the shims'
// -address), and runtime daemons known by name, with or without a sandbox
// of theirs running. The screen plans a process row through the same
// planner (TestScreenRefusesSupervisors).
func TestKillRefusesSupervisors(t *testing.T) {
	m := fleettest.Start(t, fleet.Spec{
		Sandboxes: []fleet.SandboxSpec{
			{Name: "vm", Runtime: fleet.VM0},
			{Name: "ctr", Runtime: fleet.Containerd},
			{Name: "dock", Runtime: fleet.Docker},
			{Name: "cube", Runtime: fleet.Cube},
		},
		Bystanders: []fleet.BystanderSpec{
			{Role: "dockerd", Argv: []string{"dockerd", "-H", "fd://"}},
			{Role: "kubelet", Argv: []string{"kubelet", "--config", "/var/lib/kubelet/config.yaml"}},
			{Role: "crio", Argv: []string{"crio"}},
			{Role: "podman-service", Argv: []string{"podman", "system", "service", "--time", "0"}},
			{Role: "machined", Argv: []string{"systemd-machined"}},
		},
	}).Manifest()
	// Another fleet, with a containerd of its own: what hangs on it does
	// not depend on this fleet's containerd.
	other := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{{Name: "other", Runtime: fleet.Containerd}}}).Manifest().Sandbox("other")
	bystander := func(role string) int {
		for _, p := range m.Bystanders {
			if p.Role == role {
				return p.PID
			}
		}
		t.Fatalf("no bystander %s", role)
		return 0
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, tc := range []struct {
		name string
		pid  int
		want []string
	}{
		{"vm0 runner", m.Sandbox("vm").Supervisor.PID, []string{"supervisor of sandbox " + m.Sandbox("vm").ID}},
		{"containerd", m.Sandbox("ctr").Supervisor.PID, []string{"runtime daemon containerd", m.Sandbox("ctr").ID, m.Sandbox("dock").ID}},
		{"cubelet", m.Sandbox("cube").Supervisor.PID, []string{"runtime daemon cubelet", m.Sandbox("cube").ID}},
		// This dockerd runs no containerd and names none: the fleet's
		// Docker container hangs on the fleet's containerd, not on it.
		{"dockerd", bystander("dockerd"), []string{"runtime daemon dockerd"}},
		{"kubelet", bystander("kubelet"), []string{"runtime daemon kubelet"}},
		{"cri-o", bystander("crio"), []string{"runtime daemon cri-o"}},
		{"podman system service", bystander("podman-service"), []string{"runtime daemon podman system service"}},
		{"systemd-machined", bystander("machined"), []string{"runtime daemon systemd-machined"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := sandtop(t, "kill", "--force", "--grace", "0", "--audit-log", audit, "--pid", strconv.Itoa(tc.pid))
			if code != exitUsage || !strings.Contains(errOut, "refused pid "+strconv.Itoa(tc.pid)) {
				t.Fatalf("kill --pid %d (%s): exit %d\nstdout %s\nstderr %s", tc.pid, tc.name, code, out, errOut)
			}
			// A daemon's refusal names the sandboxes behind that daemon,
			// never the rest of its runtime's (other fleets' containerds
			// on this host).
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("the refusal does not say %q:\n%s", w, errOut)
				}
			}
			if tc.name == "containerd" && (!strings.Contains(errOut, "which 2 sandboxes depend on") || strings.Contains(errOut, other.ID)) {
				t.Errorf("the refusal of this fleet's containerd names more than its sandboxes:\n%s", errOut)
			}
		})
	}
	for _, sb := range m.Sandboxes {
		for _, p := range append(sb.Processes, *sb.Supervisor) {
			if !alive(p.Identity) && p.Role != fleet.RoleZombie {
				t.Errorf("%s: %d %s is gone", sb.Name, p.PID, p.Comm)
			}
		}
	}
	if _, err := os.Stat(audit); err == nil {
		t.Error("a refused kill wrote an audit record")
	}
}

// TestKillKeptLeftoversFails: after a vm0 VM's processes are killed by
// hand while its runner lives on (running another VM in the same
// workspaces base), kill of the dead VM's leftovers keeps them (the
// runner owns the base) and, having removed nothing it was asked to,
// exits 1 and says why, instead of 0.
func TestKillKeptLeftoversFails(t *testing.T) {
	m := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "dead", Runtime: fleet.VM0},
		{Name: "live", Runtime: fleet.VM0},
	}}).Manifest()
	dead := m.Sandbox("dead")
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	if code, out, errOut := sandtop(t, "kill", "--force", "--grace", "0", "--audit-log", audit, "--pid", strconv.Itoa(dead.Root().PID)); code != 0 {
		t.Fatalf("kill --pid of the VM: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := sandtop(t, "kill", "--force", "--audit-log", audit, dead.ID)
	if code != exitFailure || !strings.Contains(errOut, "nothing of "+dead.ID+" was removed") || !strings.Contains(errOut, "owns") {
		t.Errorf("kill of kept leftovers: exit %d, want %d saying why\nstdout %s\nstderr %s", code, exitFailure, out, errOut)
	}
}
