package ui

import (
	"context"
	"os"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
)

// TestMain lets the test binary serve as a sandsim fleet's owner and nodes
// (fleet.Main runs MaybeRun first, makes this process a child subreaper
// and reaps what is left at the end).
func TestMain(m *testing.M) {
	// Golden files hold plain text: no color, and the same on every host.
	lipgloss.SetColorProfile(termenv.Ascii)
	lipgloss.SetHasDarkBackground(true)
	time.Local = time.UTC
	fleet.Main(m)
}

// The fixed clock of every fixture: boot 100,000 s before the first scan.
var (
	t0   = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	boot = t0.Add(-100_000 * time.Second)
)

// Sandbox IDs of the fixture fleet. The two vm0 IDs share 12 characters,
// so their short forms need 13.
const (
	idVM0      = "7d1e2c3a4b5c6d7e"
	idOrphan   = "7d1e2c3a4b5c9999"
	idShim     = "c0ffee0011223344"
	idPaused   = "deadbeef00000001"
	shimSocket = "/run/containerd/containerd.sock"
)

func re(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// testRules are hand-written rules in the shapes of the presets.
var testRules = model.Rules{
	{
		Name: "vm0", Source: "rules.toml:1", Exe: re(`(^|/)firecracker$`),
		Argv:       re(`--api-sock /run/vm0/sock/(?P<id>[^/ ]+)/`),
		Supervisor: model.Supervisor{Ancestor: re(`(^|/)runner start\b`)},
		Cleanup:    []string{"/run/vm0/sock/{id}"},
	},
	{
		Name: "containerd", Source: "rules.toml:9", Exe: re(`containerd-shim-[a-z0-9]+-v[0-9]+$`),
		Flag: "-id", Supervisor: model.Supervisor{SocketFlag: "-address"},
	},
}

// pr makes a process started `age` before t0; argv is split on spaces.
func pr(pid, ppid int, age time.Duration, argv string, opts ...modeltest.Opt) *proc.Process {
	defaults := func(p *proc.Process) {
		p.Threads = 1
		p.Start = uint64((100_000*time.Second - age) / (10 * time.Millisecond))
		p.RSS, p.CPUTicks, p.Cgroup = uint64(pid%7+1)<<20, uint64(pid%13*10), "/system.slice"
		if len(p.Argv) > 0 {
			p.Exe = p.Argv[0]
		}
	}
	return modeltest.Proc(pid, ppid, argv, append([]modeltest.Opt{defaults}, opts...)...)
}

var (
	cg      = modeltest.Cgroup
	uid     = modeltest.UID
	ticks   = modeltest.Ticks
	nsPIDs  = modeltest.NSpid
	zombie  = modeltest.Zombie
	stopped = modeltest.Stopped
)

// snapshot assembles a snapshot at t0+at with PID 1, kthreadd and sandtop.
func snapshot(at time.Duration, procs ...*proc.Process) *proc.Snapshot {
	base := []*proc.Process{
		pr(1, 0, 100_000*time.Second, "/process_api --firecracker-init", cg("/")),
		{PID: 2, Comm: "kthreadd", Kernel: true, State: 'S'},
		pr(900, 501, time.Minute, "sandtop", uid(1000)),
	}
	return modeltest.Snapshot(proc.Snapshot{
		Time: t0.Add(at), BootTime: boot, ClockTicks: 100, PageSize: 4096, Hostname: "testhost", Self: 900,
		Cgroups:   map[string]proc.CgroupState{"/kubepods/" + idShim: {Exists: true, Populated: true}, "/sandboxes/" + idPaused: {Exists: true, Populated: true, Frozen: true}},
		Freezers:  map[string]proc.CgroupState{},
		Listeners: map[string]bool{shimSocket: true},
	}, append(base, procs...)...)
}

// fleetProcs is the fixture fleet: a supervised vm0 sandbox (with a
// zombie), an orphaned one, a containerd pod in a dedicated cgroup, a
// paused orphan shim in a frozen cgroup, and a few host processes.
// extra are added (or replace a pid) for later scans.
func fleetProcs(extra ...*proc.Process) []*proc.Process {
	shimArgs := func(id, sock string) string {
		return "/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id " + id + " -address " + sock
	}
	podCg, pausedCg := cg("/kubepods/"+idShim), cg("/sandboxes/"+idPaused)
	procs := []*proc.Process{
		pr(100, 1, 2*time.Hour, "/usr/local/bin/runner start --config /etc/runner.yaml"),
		pr(110, 100, 3*time.Minute+12*time.Second, "/usr/bin/firecracker --api-sock /run/vm0/sock/"+idVM0+"/api.sock --id "+idVM0, ticks(1200)),
		pr(111, 110, 3*time.Minute, "/usr/bin/vsock-proxy --port 52", nsPIDs(111, 2)),
		pr(112, 110, 2*time.Minute, "", zombie("sh")),
		pr(210, 1, 26*time.Hour, "/usr/bin/firecracker --api-sock /run/vm0/sock/"+idOrphan+"/api.sock", ticks(90_000)),
		pr(211, 210, 26*time.Hour, "/usr/bin/vsock-proxy --port 53"),
		pr(300, 1, 45*time.Second, shimArgs(idShim, shimSocket), podCg),
		pr(301, 300, 44*time.Second, "/pause", podCg),
		pr(302, 300, 40*time.Second, "nginx: master process nginx -g daemon off;", podCg, uid(101)),
		pr(303, 302, 40*time.Second, "nginx: worker process", podCg, uid(101)),
		pr(304, 302, 40*time.Second, "nginx: worker process", podCg, uid(101)),
		pr(400, 1, 50*time.Minute, shimArgs(idPaused, "/run/gone.sock"), pausedCg, stopped()),
		pr(401, 400, 50*time.Minute, "python3 /app/main.py --serve", pausedCg, stopped(), uid(1000)),
		pr(500, 1, 3*time.Hour, "/usr/sbin/sshd -D"),
		pr(501, 500, time.Hour, "-bash", uid(1000)),
		pr(502, 501, 10*time.Minute, "vim notes.txt", uid(1000)),
	}
	for _, e := range extra {
		if i := slices.IndexFunc(procs, func(p *proc.Process) bool { return p.PID == e.PID }); i >= 0 {
			procs[i] = e
		} else {
			procs = append(procs, e)
		}
	}
	return procs
}

// fleetViews returns n successive views of the fleet, one second apart,
// built like the real Source builds them (sticky attribution included).
// CPU grows between them so the CPU% column has something to show.
func fleetViews(n int) []*model.View {
	b := model.NewBuilder(testRules)
	var w model.Watch
	var prev *model.View
	var out []*model.View
	for i := range n {
		procs := fleetProcs(
			pr(110, 100, 3*time.Minute+12*time.Second, "/usr/bin/firecracker --api-sock /run/vm0/sock/"+idVM0+"/api.sock --id "+idVM0, ticks(uint64(1200+50*i))),
			pr(303, 302, 40*time.Second, "nginx: worker process", cg("/kubepods/"+idShim), uid(101), ticks(uint64(20*i))),
		)
		v := b.Build(snapshot(time.Duration(i)*time.Second, procs...), prev)
		// Each dedicated cgroup does IO and feels memory pressure, the
		// later ones more, so the IO and pressure orders mean something.
		wants, _ := model.ResourceWants(v, model.ResourceNeeds{})
		v.Snapshot.Resources = map[proc.CgroupKey]*proc.CgroupResources{}
		for j, w := range wants {
			v.Snapshot.Resources[w.Key] = &proc.CgroupResources{
				Have:   proc.HaveIO | proc.HavePressureMemory | proc.HaveMemoryLimit,
				IORead: uint64((i + 1) * (j + 1) << 20), PressureMemory: float64(5 * (j + 1)), MemoryLimit: 256 << 20,
			}
		}
		prev = w.Apply(v)
		out = append(out, prev)
	}
	return out
}

var testUsers = map[int]string{0: "root", 101: "nginx", 1000: "alice"}

func testLookup(uid int) string {
	if n, ok := testUsers[uid]; ok {
		return n
	}
	return "?"
}

// fakeSource hands out views in order and repeats the last one.
type fakeSource struct {
	mu    sync.Mutex
	views []*model.View
	calls int
}

func (s *fakeSource) Scan() (*model.View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.views[min(s.calls, len(s.views)-1)]
	s.calls++
	return v, nil
}

// push appends a view for the next scans.
func (s *fakeSource) push(v *model.View) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.views = append(s.views[:min(s.calls, len(s.views))], v)
}

// fakeKiller plans with the real planner and runs a scripted teardown: it
// emits the plan's steps and reports every member killed, then appends the
// audit record to audit as the real Killer does. release, when set, holds
// Run until it is closed.
type fakeKiller struct {
	mu      sync.Mutex
	planned []Target
	ran     []string
	release chan struct{}
	audit   string
}

func (k *fakeKiller) Plan(v *model.View, t Target, grace time.Duration) (*teardown.Plan, error) {
	k.mu.Lock()
	k.planned = append(k.planned, t)
	k.mu.Unlock()
	o := teardown.PlanOptions{Grace: grace}
	if t.Sandbox != "" {
		sb := v.Sandbox(t.Sandbox)
		if sb == nil {
			return nil, &os.PathError{Op: "plan", Path: t.Sandbox, Err: os.ErrNotExist}
		}
		return teardown.PlanSandbox(v, sb, o)
	}
	return teardown.PlanSubtree(v, t.Process.PID, o)
}

func (k *fakeKiller) Run(ctx context.Context, p *teardown.Plan, emit func(teardown.Event)) Outcome {
	k.mu.Lock()
	k.ran = append(k.ran, p.Target)
	release := k.release
	k.mu.Unlock()
	at := t0.Add(time.Minute)
	ev := func(step teardown.Step, st teardown.Status, pid int, comm, detail string) {
		emit(teardown.Event{Time: at, Sandbox: p.Target, Step: step, Status: st, PID: pid, Comm: comm, Detail: detail})
	}
	ev(teardown.StepPlan, teardown.OK, p.RootPID, "", p.Strategy())
	ev(teardown.StepPin, teardown.OK, 0, "", "all pinned")
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	t := teardown.Totals{}
	for _, m := range p.Members {
		if m.Zombie {
			t.AlreadyGone++
			ev(teardown.StepKill, teardown.Skip, m.PID, m.Comm, "zombie")
			continue
		}
		t.Killed++
		ev(teardown.StepKill, teardown.OK, m.PID, m.Comm, "")
	}
	ev(teardown.StepVerify, teardown.OK, 0, "", "nothing remains")
	ev(teardown.StepDone, teardown.OK, 0, "", "done")
	o := Outcome{Totals: t, Audit: k.audit}
	if k.audit != "" {
		o.AuditErr = teardown.AppendAudit(k.audit, teardown.NewAuditRecord("tui", p, t))
	}
	return o
}

func (k *fakeKiller) runs() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.ran)
}

// failKiller fails the test if anything reaches it.
type failKiller struct{ t testing.TB }

func (k failKiller) Plan(*model.View, Target, time.Duration) (*teardown.Plan, error) {
	k.t.Errorf("read-only TUI reached Killer.Plan")
	return nil, os.ErrPermission
}

func (k failKiller) Run(context.Context, *teardown.Plan, func(teardown.Event)) Outcome {
	k.t.Errorf("read-only TUI reached Killer.Run")
	return Outcome{}
}

// newTestModel makes a model on fixture views with a 1 h interval, so
// that only the test decides when a refresh happens.
func newTestModel(t testing.TB, src Source, k Killer, mut ...func(*Options)) *Model {
	t.Helper()
	root := 0 // as CI runs the tests; the screen's words for others are tested by setting it
	o := Options{Source: src, Killer: k, Interval: time.Hour, Grace: 5 * time.Second, LookupUser: testLookup, EUID: &root}
	if fk, ok := k.(*fakeKiller); ok && fk.audit == "" {
		fk.audit = t.TempDir() + "/audit.jsonl"
	}
	for _, f := range mut {
		f(&o)
	}
	m := New(o)
	m.tick = noTick
	m.clipboard = func(string) tea.Cmd { return nil } // no OSC 52 on the test's stdout
	t.Cleanup(func() { _ = m.Shutdown() })
	return m
}

// noTick stands in for the refresh timer: tests refresh with `r`.
func noTick(time.Duration, int) tea.Cmd { return nil }

// settle feeds msgs to the model and runs every command it returns,
// feeding the answers back, until nothing is left: the model is driven
// synchronously and deterministically. The refresh timer is off (noTick)
// and spinner frames are dropped, so every command answers at once.
func settle(m *Model, msgs ...tea.Msg) {
	for _, msg := range msgs {
		if b, ok := msg.(tea.BatchMsg); ok {
			// The commands of a batch run at once, as in a program: the
			// teardown goroutine fills a channel its waiter drains.
			done := make(chan []tea.Msg, len(b))
			for _, c := range b {
				go func() { done <- run(c) }()
			}
			for range b {
				settle(m, <-done...)
			}
			continue
		}
		_, cmd := m.Update(msg)
		settle(m, run(cmd)...)
	}
}

func run(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	ch := make(chan tea.Msg, 1)
	go func() { ch <- cmd() }()
	select {
	case msg := <-ch:
		switch msg.(type) {
		case nil, tea.QuitMsg, spinner.TickMsg:
			return nil
		}
		return []tea.Msg{msg}
	case <-time.After(30 * time.Second):
		panic("settle: a command did not answer in 30s")
	}
}

// keys turns key names as bubbletea spells them into key messages.
func keys(names ...string) []tea.Msg {
	out := make([]tea.Msg, len(names))
	for i, n := range names {
		out[i] = keyMsg(n)
	}
	return out
}

var keyTypes = map[string]tea.KeyType{
	"up": tea.KeyUp, "down": tea.KeyDown, "left": tea.KeyLeft, "right": tea.KeyRight,
	"pgup": tea.KeyPgUp, "pgdown": tea.KeyPgDown, "home": tea.KeyHome, "end": tea.KeyEnd,
	"enter": tea.KeyEnter, "esc": tea.KeyEsc, "tab": tea.KeyTab, "shift+tab": tea.KeyShiftTab,
	"backspace": tea.KeyBackspace, " ": tea.KeySpace,
	"ctrl+c": tea.KeyCtrlC, "ctrl+b": tea.KeyCtrlB, "ctrl+f": tea.KeyCtrlF, "ctrl+s": tea.KeyCtrlS,
	"ctrl+n": tea.KeyCtrlN, "ctrl+t": tea.KeyCtrlT, "shift+left": tea.KeyShiftLeft, "shift+right": tea.KeyShiftRight,
	"f3": tea.KeyF3, "f4": tea.KeyF4, "f5": tea.KeyF5, "f6": tea.KeyF6, "f9": tea.KeyF9, "f10": tea.KeyF10,
}

func keyMsg(name string) tea.KeyMsg {
	if t, ok := keyTypes[name]; ok {
		return tea.KeyMsg{Type: t}
	}
	if len([]rune(name)) != 1 {
		panic("keyMsg: unknown key " + name)
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(name)}
}

// typeText types s into the model, one key per rune.
func typeText(s string) []tea.Msg {
	var out []tea.Msg
	for _, r := range s {
		out = append(out, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	return out
}

func size(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

// selectedKey names the row under the cursor.
func selectedKey(m *Model) rowKey {
	if r := m.table.selected(); r != nil {
		return r.key
	}
	return rowKey{}
}

// cursorTo moves the cursor onto the row with key k, failing the test if
// there is none.
func cursorTo(t testing.TB, m *Model, k rowKey) {
	t.Helper()
	i := find(m.table.rows, k)
	if i < 0 {
		t.Fatalf("no row %+v", k)
	}
	m.table.cursor = i
	m.table.clamp()
}

// sk is the sandbox Key of a fixture ID: its runtime and the ID (the
// fixture rules name no namespace).
func sk(id string) string {
	switch id {
	case idVM0, idOrphan:
		return "vm0:" + id
	}
	return "containerd:" + id
}
