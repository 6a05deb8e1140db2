//go:build testhost

package guest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The parts of `sandtop list --json` the checks read (docs/json.md).
type document struct {
	Sandboxes []sandbox `json:"sandboxes"`
}

type sandbox struct {
	ID            string    `json:"id"`
	Runtime       string    `json:"runtime"`
	Namespace     string    `json:"namespace"`
	Name          string    `json:"name"`
	RootPID       int       `json:"root_pid"`
	SupervisorPID int       `json:"supervisor_pid"`
	Supervisor    string    `json:"supervisor"`
	Cgroup        string    `json:"cgroup"`
	Frozen        bool      `json:"frozen"`
	Badges        []string  `json:"badges"`
	Processes     []process `json:"processes"`
}

type process struct {
	PID  int      `json:"pid"`
	Comm string   `json:"comm"`
	Argv []string `json:"argv"`
}

// sh runs a command and returns its trimmed output, failing the test when
// it fails.
func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// try runs a command and returns its output and error, for cleanups and
// commands whose failure is the point.
func try(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// list is `sandtop list --json`.
func list(t *testing.T) document {
	t.Helper()
	out, err := exec.Command("sandtop", "list", "--json").Output()
	if err != nil {
		t.Fatalf("sandtop list --json: %v", err)
	}
	var d document
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("sandtop list --json: %v", err)
	}
	return d
}

// find returns the sandbox whose ID is id, or nil.
func (d document) find(id string) *sandbox {
	for i := range d.Sandboxes {
		if d.Sandboxes[i].ID == id {
			return &d.Sandboxes[i]
		}
	}
	return nil
}

// holding lists the sandboxes that have pid as a member, as runtime:ID.
func (d document) holding(pid int) []string {
	var out []string
	for _, s := range d.Sandboxes {
		for _, p := range s.Processes {
			if p.PID == pid {
				out = append(out, s.Runtime+":"+s.ID)
			}
		}
	}
	return out
}

func (s *sandbox) has(pid int) bool {
	return slices.ContainsFunc(s.Processes, func(p process) bool { return p.PID == pid })
}

func (s *sandbox) hasComm(comm string) bool {
	return slices.ContainsFunc(s.Processes, func(p process) bool { return p.Comm == comm })
}

func (s *sandbox) describe() string {
	var ps []string
	for _, p := range s.Processes {
		ps = append(ps, fmt.Sprintf("%d %s", p.PID, strings.Join(p.Argv, " ")))
	}
	return fmt.Sprintf("%s:%s cgroup %q badges %v root %d supervisor %d (%s)\n  %s",
		s.Runtime, s.ID, s.Cgroup, s.Badges, s.RootPID, s.SupervisorPID, s.Supervisor, strings.Join(ps, "\n  "))
}

// mustFind fails the test unless sandtop lists a sandbox with this ID,
// showing what it made of the pid instead.
func mustFind(t *testing.T, d document, id string, pid int) *sandbox {
	t.Helper()
	s := d.find(id)
	if s == nil {
		var all []string
		for _, s := range d.Sandboxes {
			all = append(all, s.Runtime+":"+s.ID)
		}
		t.Fatalf("no sandbox %s; pid %d is in %v; sandboxes: %v", id, pid, d.holding(pid), all)
	}
	return s
}

// alive says whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	return i > 0 && len(data) > i+2 && data[i+2] != 'Z'
}

// settle is how long a check waits for the guest to come round (a process
// to die, a runtime to notice): under TCG on a busy 2-core host, runtimes
// took tens of seconds to notice a kill.
const settle = 60 * time.Second

// eventually polls ok until it holds or settle has passed, and says
// whether it held.
func eventually(ok func() bool) bool {
	end := time.Now().Add(settle)
	for !ok() {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return true
}

// waitGone waits for pid to die.
func waitGone(pid int) bool { return eventually(func() bool { return !alive(pid) }) }

// cgroupOf is pid's cgroup v2 path.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatalf("cgroup of %d: %v", pid, err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p
		}
	}
	t.Fatalf("pid %d has no cgroup v2 path: %s", pid, data)
	return ""
}

// kill runs `sandtop kill --force` on target and returns its output, and
// an error when it failed.
func kill(target string, extra ...string) (string, error) {
	args := append([]string{"kill", "--force", "--grace", "2s"}, extra...)
	out, err := try("sandtop", append(args, target)...)
	if err != nil {
		return out, fmt.Errorf("sandtop kill %s: %v\n%s", target, err, out)
	}
	return out, nil
}

// bystanders are processes no check may touch: a transient scope and a
// transient service, as systemd-run starts them, and a login session. One
// set serves the whole suite; every check's sandboxes are bystanders to
// the others' too, as the checks run side by side.
type bystanders struct {
	pids []int
	stop func()
}

var by *bystanders

// The checks run in two lanes side by side, one per vCPU of the guest,
// each lane's checks one after another: containerd's (Docker's orphan
// check kills containerd) with rootless podman, which evens out the lanes'
// lengths, and all the others.
var containerdLane, otherLane sync.Mutex

// inLane runs t beside the other lane's checks, after the checks of its own
// lane. The suite runs with -test.parallel above its number of tests, so a
// test waiting for its lane holds no other test's turn.
func inLane(t *testing.T, lane *sync.Mutex) {
	t.Parallel()
	waiting := time.Now()
	lane.Lock()
	start := time.Now()
	t.Cleanup(func() {
		lane.Unlock()
		t.Logf("waited %s for its lane, ran %s", start.Sub(waiting).Round(time.Second), time.Since(start).Round(time.Second))
	})
}

func TestMain(m *testing.M) {
	// containerd and dockerd take a while to start under TCG: they start
	// now, while the other lane's checks run, and the checks that need
	// them wait for them (startUnits).
	exec.Command("systemctl", "start", "--no-block", "containerd.service", "docker.service").Run()
	var err error
	if by, err = startBystanders(); err != nil {
		fmt.Fprintln(os.Stderr, "bystanders:", err)
		os.Exit(1)
	}
	code := m.Run()
	by.stop()
	os.Exit(code)
}

func startBystanders() (*bystanders, error) {
	unit := "bystander"
	if out, err := try("systemd-run", "--unit", unit+"-svc", "--quiet", "sleep", "100000"); err != nil {
		return nil, fmt.Errorf("systemd-run --unit: %v: %s", err, out)
	}
	scope := exec.Command("systemd-run", "--scope", "--unit", unit+"-scope", "--quiet", "sleep", "100000")
	if err := scope.Start(); err != nil {
		return nil, fmt.Errorf("systemd-run --scope: %w", err)
	}
	login := exec.Command("su", "-l", "-c", "exec sleep 100000")
	login.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := login.Start(); err != nil {
		return nil, fmt.Errorf("su -l: %w", err)
	}
	b := &bystanders{stop: func() {
		try("systemctl", "stop", unit+"-svc.service", unit+"-scope.scope")
		login.Process.Kill()
		login.Wait()
		scope.Wait()
	}}
	var svc int
	for i := 0; i < 50 && svc == 0; i++ {
		out, _ := try("systemctl", "show", "-P", "MainPID", unit+"-svc.service")
		svc, _ = strconv.Atoi(out)
		time.Sleep(100 * time.Millisecond)
	}
	// The scope's sleep is systemd-run itself, exec'd.
	b.pids = append(b.pids, svc, scope.Process.Pid)
	// su opens the session (pam_systemd) before it forks the shell, which
	// under TCG on a busy host took more than 5 s.
	for i := 0; i < 300; i++ {
		if kids := children(login.Process.Pid); len(kids) > 0 {
			b.pids = append(b.pids, kids...)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.pids = append(b.pids, login.Process.Pid)
	if slices.Contains(b.pids, 0) || len(b.pids) < 4 {
		b.stop()
		return nil, fmt.Errorf("bystanders did not start: %v", b.pids)
	}
	return b, nil
}

// check returns an error unless every bystander lives and no sandbox
// claims one.
func (b *bystanders) check(t *testing.T) error {
	t.Helper()
	d := list(t)
	for _, pid := range b.pids {
		if !alive(pid) {
			return fmt.Errorf("bystander %d was killed", pid)
		}
		if in := d.holding(pid); len(in) > 0 {
			return fmt.Errorf("bystander %d (%s) is listed in %v", pid, cgroupOf(t, pid), in)
		}
	}
	return nil
}

func children(pid int) []int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var out []int
	for _, f := range strings.Fields(string(data)) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

// badge says whether s has badge b.
func badge(s *sandbox, b string) bool { return slices.Contains(s.Badges, b) }

// startUnits starts systemd units and fails the test when one does not
// start.
func startUnits(t *testing.T, units ...string) {
	t.Helper()
	sh(t, "systemctl", append([]string{"start"}, units...)...)
}

// check runs one named check as a subtest and fails it when fn returns an
// error.
func check(t *testing.T, name string, fn func(t *testing.T) error) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		if err := fn(t); err != nil {
			t.Error(err)
		}
	})
}

// want returns an error describing s unless ok.
func want(ok bool, s *sandbox, format string, args ...any) error {
	if ok {
		return nil
	}
	msg := fmt.Sprintf(format, args...)
	if s != nil {
		msg += ":\n" + s.describe()
	}
	return fmt.Errorf("%s", msg)
}

// serviceRun runs the shell command run as the systemd service unit (a
// oneshot that stays active after its command exits, so that what the
// command left running stays in the unit's cgroup) and returns the
// command's output. systemd-run returns once the start job is done, which
// for a oneshot is when its command has exited; --wait would wait for the
// unit to stop, which RemainAfterExit holds off.
func serviceRun(t *testing.T, unit, run string) string {
	t.Helper()
	out := "/run/" + unit + ".out"
	_, err := try("systemd-run", "--unit", unit, "--quiet", "-p", "Type=oneshot", "-p", "RemainAfterExit=yes",
		"-p", "StandardOutput=file:"+out, "-p", "StandardError=journal", "sh", "-c", run)
	t.Cleanup(func() { try("systemctl", "stop", unit); os.Remove(out) })
	text, _ := os.ReadFile(out)
	if err != nil {
		status, _ := try("systemctl", "status", "--no-pager", "-n", "20", unit)
		t.Fatalf("%s: systemd-run %s: %v\n%s\n%s", unit, run, err, text, status)
	}
	return strings.TrimSpace(string(text))
}
