package reap

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/words"
	"github.com/sandtop/sandtop/teardown"
)

// Entry is one decision of the reaper: one JSON line of its log.
type Entry struct {
	Time time.Time `json:"time"`
	Pass int       `json:"pass"`
	// ID, Namespace and Key name the sandbox as list --json does.
	ID        string `json:"id"`
	Namespace string `json:"namespace,omitempty"`
	Key       string `json:"key"`
	// Runtime, Badges and Identity are the sandbox as the pass saw it.
	Runtime  string        `json:"runtime"`
	Badges   []model.Badge `json:"badges"`
	Identity string        `json:"identity"`
	// Action is what was decided or done: would-reap (dry run), reaped,
	// failed, quarantined, wait, defer, skip.
	Action string `json:"action"`
	// Reason is the policy's verdict in words ("orphan for 2m of 10m, age
	// 15m of 10m"), plus why a reap was skipped.
	Reason string `json:"reason"`
	// Evidence is what the view said about the sandbox: its supervisor
	// note.
	Evidence       string  `json:"evidence"`
	MatchedSeconds float64 `json:"matched_for_seconds"`
	ForSeconds     float64 `json:"for_seconds"`
	AgeSeconds     float64 `json:"age_seconds"`
	MinAgeSeconds  float64 `json:"min_age_seconds"`
	// Processes counts the sandbox's processes.
	Processes int `json:"processes"`
	// Plan says what a teardown does (would do, in a dry run).
	Plan string `json:"plan,omitempty"`
	// Leftovers lists what a sandbox with no process left holds.
	Leftovers []model.LeftoverJSON `json:"leftovers,omitempty"`
	// Result is the teardown's outcome, and Failures its failed steps.
	Result   *teardown.Totals `json:"result,omitempty"`
	Failures []string         `json:"failures,omitempty"`
	// Quarantine is the sandbox's record of failures once it is in
	// quarantine.
	Quarantine *Failures `json:"quarantine,omitempty"`
}

// Logger writes entries as JSON lines or as text lines.
type Logger struct {
	mu   sync.Mutex
	w    io.Writer
	text bool
}

// NewLogger logs to w; format is "json" or "text".
func NewLogger(w io.Writer, format string) (*Logger, error) {
	switch format {
	case "json", "text":
	default:
		return nil, fmt.Errorf("log format %q: want text or json", format)
	}
	return &Logger{w: w, text: format == "text"}, nil
}

// Log writes one entry.
func (l *Logger) Log(e Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.text {
		b, err := json.Marshal(e)
		if err != nil {
			return
		}
		l.w.Write(append(b, '\n'))
		return
	}
	l.w.Write([]byte(e.Text() + "\n"))
}

// Text is the entry as one line for a person, with what a process
// controls in it (the ID, paths, comms) escaped (model.Printable).
func (e Entry) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s pass %d %-10s %s (%s): %s", e.Time.UTC().Format(time.RFC3339), e.Pass, e.Action, e.ID, e.Runtime, e.Reason)
	if e.Evidence != "" {
		b.WriteString("; " + e.Evidence)
	}
	if e.Plan != "" {
		verb := "does"
		if e.Action == "would-reap" {
			verb = "would"
		}
		b.WriteString("; " + verb + ": " + e.Plan)
	}
	if e.Result != nil {
		fmt.Fprintf(&b, "; %d killed, %d already gone, %s, %s", e.Result.Killed, e.Result.AlreadyGone, words.Count(len(e.Result.Survivors), "survivor", "survivors"), words.Count(e.Result.Failed, "failed step", "failed steps"))
	}
	for _, f := range e.Failures {
		b.WriteString("; FAIL " + f)
	}
	return model.Printable(b.String())
}

// describePlan says in one line what a teardown of the plan does, in the
// plan's own words (teardown.Facts).
func describePlan(p *teardown.Plan) string {
	f := p.Facts()
	return f.Strategy + "; " + f.ProcessesText() + "; cgroup: " + f.Cgroup + "; cleanup: " + f.Cleanup
}
