package hostview

import (
	"sync"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// Watcher is a model.Watch with the readers that feed it: after each
// Build it reads the resource files of the view's sandbox cgroups, the
// wait channels of its members in D, the kernel log's OOM kills and,
// where asked (SetNeeds), the sandboxes' network namespaces into the
// view's snapshot, then lets the Watch judge.
type Watcher struct {
	rr *proc.ResourceReader
	nr *proc.NetworkReader
	w  model.Watch
	// needs is what the front end shows (SetNeeds); the zero value reads
	// every figure.
	mu    sync.Mutex
	needs model.ResourceNeeds
}

// NewWatcher reads the host sc scans, holding the descriptors of the
// cgroup files it reads at every refresh out of sc's budget. The caller
// closes the Watcher before sc.
func NewWatcher(sc *proc.Scanner) *Watcher {
	return &Watcher{rr: sc.NewResourceReader(), nr: proc.NewNetworkReader(sc.ProcRoot())}
}

// SetNeeds narrows what the next Applies read to the figures a front end
// shows (the screen: its columns, and the sandbox in its detail pane).
func (t *Watcher) SetNeeds(n model.ResourceNeeds) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.needs = n
}

// Needs is what SetNeeds last said.
func (t *Watcher) Needs() model.ResourceNeeds {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.needs
}

// Apply reads what v's sandboxes need and returns v judged (see
// model.Watch.Apply). v's snapshot must not have been handed out yet.
func (t *Watcher) Apply(v *model.View) *model.View {
	needs := t.Needs()
	wants, pids := model.ResourceWants(v, needs)
	t.rr.Read(v.Snapshot, wants, pids)
	t.nr.Read(v.Snapshot, model.NetworkWants(v, needs))
	return t.w.Apply(v)
}

// ReadLogAhead starts reading the kernel log before the view exists, for
// a command that scans once (see proc.ResourceReader.ReadLogAhead).
func (t *Watcher) ReadLogAhead() { t.rr.ReadLogAhead() }

// Close releases the reader's kernel log and descriptors.
func (t *Watcher) Close() { t.rr.Close() }
