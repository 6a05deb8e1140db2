package hostview

import (
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// Watcher is a model.Watch with the reader that feeds it: after each
// Build it reads the resource files of the view's sandbox cgroups, the
// wait channels of its members in D and the kernel log's OOM kills into
// the view's snapshot, then lets the Watch judge.
type Watcher struct {
	rr *proc.ResourceReader
	w  model.Watch
}

// NewWatcher reads the host sc scans (sc may be closed since). The caller
// closes the Watcher.
func NewWatcher(sc *proc.Scanner) *Watcher {
	return &Watcher{rr: proc.NewResourceReader(sc.ProcRoot(), sc.Mounts())}
}

// Apply reads what v's sandboxes need and returns v judged (see
// model.Watch.Apply). v's snapshot must not have been handed out yet.
func (t *Watcher) Apply(v *model.View) *model.View {
	keys, pids := model.ResourceWants(v)
	t.rr.Read(v.Snapshot, keys, pids)
	return t.w.Apply(v)
}

// Close releases the reader's kernel log.
func (t *Watcher) Close() { t.rr.Close() }
