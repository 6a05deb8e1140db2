package reap

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// DefaultStateDir is where the reaper keeps what must outlive one run.
const DefaultStateDir = "/var/lib/sandtop"

// DefaultQuarantineAfter is how many failed teardowns in a row, with the
// same evidence, put a sandbox in quarantine.
const DefaultQuarantineAfter = 3

// quarantineFile is the state file's name in the state directory.
const quarantineFile = "reaper-quarantine.json"

// Quarantine remembers, across runs, the teardowns that keep failing: a
// cleanup that fails (an immutable file, a mount that will not go) would
// otherwise be tried every pass for ever, each time a teardown and an
// audit record. After After failures in a row under the same evidence
// (the tracker's identity: the same root, or the same leftovers) a
// sandbox is quarantined: listed with its last error and not tried again
// until its evidence changes or the operator asks (--retry-quarantined).
// It lives in a file so that `reap --once` from a timer counts as the
// long-running reaper does.
type Quarantine struct {
	path  string
	after int
	m     map[string]*Failures
}

// Failures is what the quarantine knows of one sandbox.
type Failures struct {
	Key     string `json:"key"`
	ID      string `json:"id"`
	Runtime string `json:"runtime"`
	// Evidence is the identity the failures happened under.
	Evidence string `json:"evidence"`
	// Count is the failed teardowns in a row under Evidence.
	Count     int       `json:"count"`
	LastError string    `json:"last_error"`
	Last      time.Time `json:"last"`
	// Since is when it was quarantined (zero while it is not).
	Since time.Time `json:"quarantined_since,omitzero"`
}

// Quarantined reports whether f is in quarantine.
func (f *Failures) Quarantined() bool { return !f.Since.IsZero() }

type quarantineState struct {
	Version   int         `json:"version"`
	Sandboxes []*Failures `json:"sandboxes"`
}

// LoadQuarantine reads the state in dir (none yet is an empty state).
// retry releases everything in quarantine for one more try each: one more
// failure puts it back.
func LoadQuarantine(dir string, after int, retry bool) (*Quarantine, error) {
	if after < 1 {
		return nil, fmt.Errorf("quarantine after %d failures: want at least 1", after)
	}
	q := &Quarantine{path: filepath.Join(dir, quarantineFile), after: after, m: map[string]*Failures{}}
	data, err := os.ReadFile(q.path)
	if errors.Is(err, fs.ErrNotExist) {
		return q, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the reaper's state: %w", err)
	}
	var st quarantineState
	if err := json.Unmarshal(data, &st); err != nil || st.Version != 1 {
		return nil, fmt.Errorf("the reaper's state %s is not a state file sandtop wrote (move it away to start afresh): %v", q.path, err)
	}
	for _, f := range st.Sandboxes {
		if f == nil || f.Key == "" {
			continue
		}
		if retry && f.Quarantined() {
			f.Since, f.Count = time.Time{}, after-1
		}
		q.m[f.Key] = f
	}
	return q, nil
}

// Blocked returns the failures of a sandbox in quarantine under this
// evidence; a sandbox whose evidence changed is forgotten (nil), and so
// tried again.
func (q *Quarantine) Blocked(key, evidence string) *Failures {
	f := q.m[key]
	if f == nil {
		return nil
	}
	if f.Evidence != evidence {
		delete(q.m, key)
		return nil
	}
	if f.Quarantined() {
		return f
	}
	return nil
}

// Failed counts a failed teardown and reports whether the sandbox is now
// in quarantine.
func (q *Quarantine) Failed(key, id, runtime, evidence, why string, now time.Time) *Failures {
	f := q.m[key]
	if f == nil || f.Evidence != evidence {
		f = &Failures{Key: key, ID: id, Runtime: runtime, Evidence: evidence}
		q.m[key] = f
	}
	f.Count++
	f.LastError, f.Last = why, now
	if f.Count >= q.after && !f.Quarantined() {
		f.Since = now
	}
	return f
}

// Succeeded forgets a sandbox whose teardown completed.
func (q *Quarantine) Succeeded(key string) { delete(q.m, key) }

// Keep forgets every sandbox but those in keys (a sandbox gone from the
// host needs no memory).
func (q *Quarantine) Keep(keys map[string]bool) {
	for k := range q.m {
		if !keys[k] {
			delete(q.m, k)
		}
	}
}

// ByRuntime counts the quarantined sandboxes by runtime.
func (q *Quarantine) ByRuntime() map[string]int {
	out := map[string]int{}
	for _, f := range q.m {
		if f.Quarantined() {
			out[f.Runtime]++
		}
	}
	return out
}

// Save writes the state: a new file renamed over the old, so a crash
// leaves one or the other whole.
func (q *Quarantine) Save() error {
	st := quarantineState{Version: 1, Sandboxes: []*Failures{}}
	for _, k := range sortedKeys(q.m) {
		st.Sandboxes = append(st.Sandboxes, q.m[k])
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(q.path), 0o700); err != nil {
		return fmt.Errorf("save the reaper's state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(q.path), quarantineFile+".*")
	if err != nil {
		return fmt.Errorf("save the reaper's state: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save the reaper's state: %w", err)
	}
	if err := os.Rename(tmp.Name(), q.path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save the reaper's state: %w", err)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
