package reap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
	"github.com/sandtop/sandtop/teardown"
)

// TestMain lets the test binary play the fleets' processes, and makes it a
// subreaper of whatever they leave.
func TestMain(m *testing.M) { fleet.Main(m) }

// fleetRules are the presets with vm0's supervisor narrowed to the runners
// of these fleets: whether a runtime's supervisor lives is a question
// about the whole host, and other tests' runners run on it too.
func fleetRules(ms ...fleet.Manifest) model.Rules {
	var bases []string
	for _, m := range ms {
		bases = append(bases, regexp.QuoteMeta(m.Base))
	}
	pat := regexp.MustCompile(`(?:^| )start --config (?:` + joinAlt(bases) + `)/`)
	rules := model.Presets()
	for _, r := range rules {
		if r.Name == "vm0" {
			r.Supervisor.Ancestor = pat
		}
	}
	return rules
}

func joinAlt(ss []string) string {
	var b bytes.Buffer
	for i, s := range ss {
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(s)
	}
	return b.String()
}

// selectFleet is a selection of the badges, restricted to the sandboxes of
// these fleets: the tests share the host with other fleets.
func selectFleet(t *testing.T, badges []string, ms ...fleet.Manifest) ([]query.Query, []string) {
	t.Helper()
	var qs []query.Query
	var texts []string
	for _, m := range ms {
		for _, sb := range m.Sandboxes {
			for _, b := range badges {
				text := "badge:" + b + " id:" + sb.ID
				q, err := query.Parse(text)
				if err != nil {
					t.Fatal(err)
				}
				qs, texts = append(qs, q), append(texts, text)
			}
		}
	}
	return qs, texts
}

// harness is a reaper on the live host, logging JSON to a buffer.
type harness struct {
	r     *Reaper
	mu    sync.Mutex
	log   bytes.Buffer
	audit string
	// views are the reaper's scans, in order; maxTook the longest.
	views   []*model.View
	maxTook time.Duration
}

func (h *harness) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.log.Write(p)
}

// sawSupervisedOrReaped waits until a scan of the reaper's that started
// after since shows the sandbox with this ID supervised (a bounce it saw),
// or its log holds a reap of it (or a failed one). It reads the log
// without a testing.T, so that a fleet's goroutine may ask.
func (h *harness) sawSupervisedOrReaped(id string, since time.Time, timeout time.Duration) (supervised, reaped bool) {
	proctest.Eventually(timeout, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, v := range h.views {
			if v.Time.After(since) {
				if sb := v.Sandbox(id); sb != nil && sb.Supervised {
					supervised = true
				}
			}
		}
		for line := range bytes.Lines(h.log.Bytes()) {
			var e Entry
			if json.Unmarshal(line, &e) == nil && e.ID == id && (e.Action == "reaped" || e.Action == "failed") {
				reaped = true
			}
		}
		return supervised || reaped
	})
	return supervised, reaped
}

// entries parses the log so far.
func (h *harness) entries(t *testing.T) []Entry {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Entry
	sc := bufio.NewScanner(bytes.NewReader(h.log.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// last returns each ID's last logged action.
func (h *harness) last(t *testing.T) map[string]Entry {
	out := map[string]Entry{}
	for _, e := range h.entries(t) {
		out[e.ID] = e
	}
	return out
}

// newHarness makes a reaper with cfg (its selection, audit log and
// teardown times filled in when unset) on a scanner of its own.
func newHarness(t *testing.T, cfg Config, rules model.Rules) *harness {
	t.Helper()
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	eng, err := teardown.New(teardown.Options{Rules: rules, Scanner: sc})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{audit: filepath.Join(t.TempDir(), "audit.jsonl")}
	if cfg.AuditPath == "" {
		cfg.AuditPath = h.audit
	}
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	if cfg.Grace == 0 {
		cfg.Grace = time.Second
	}
	if cfg.Deadline == 0 {
		cfg.Deadline = 3 * time.Second
	}
	logger, err := NewLogger(h, "json")
	if err != nil {
		t.Fatal(err)
	}
	h.r, err = New(cfg, rules, sc, eng, logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.r.Observe = func(v *model.View, err error, took time.Duration) {
		if err == nil {
			h.mu.Lock()
			h.views = append(h.views, v)
			h.maxTook = max(h.maxTook, took)
			h.mu.Unlock()
		}
	}
	return h
}

// run runs the reaper until it returns or the test's budget ends.
func (h *harness) run(t *testing.T, budget time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	if err := h.r.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// auditRecords reads the audit log.
func (h *harness) auditRecords(t *testing.T) []teardown.AuditRecord {
	t.Helper()
	b, err := os.ReadFile(h.audit)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []teardown.AuditRecord
	for line := range bytes.Lines(b) {
		var r teardown.AuditRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// alive reports whether the process with this identity lives (a zombie
// counts as dead).
func alive(id proc.Identity) bool {
	st, err := proc.ReadStat("/proc", id.PID)
	return err == nil && st.Start == id.Start && !st.Zombie()
}

// allAlive and noneAlive check every process of a sandbox.
func allAlive(s *fleet.Sandbox) bool {
	for _, p := range s.Processes {
		if p.Role != fleet.RoleZombie && !alive(p.Identity) {
			return false
		}
	}
	return true
}

func noneAlive(s *fleet.Sandbox) bool {
	for _, p := range s.Processes {
		if alive(p.Identity) {
			return false
		}
	}
	return true
}

// killByHand SIGKILLs every process of the sandbox, as an operator with
// kill -9 does, and waits until they are gone.
func killByHand(t *testing.T, s *fleet.Sandbox) {
	t.Helper()
	for _, p := range s.Processes {
		pin, err := teardown.Pin("/proc", p.Identity)
		if err != nil {
			continue // gone already, or a zombie
		}
		_ = pin.Signal(unix.SIGKILL)
		pin.Close()
	}
	if !proctest.Eventually(5*time.Second, func() bool { return noneAlive(s) }) {
		t.Fatalf("%s: still alive 5s after SIGKILL", s.Name)
	}
}
