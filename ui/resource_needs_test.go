package ui

import (
	"strings"
	"testing"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// needsSource is a fakeSource that keeps what the screen last asked for.
type needsSource struct {
	fakeSource
	needs []model.ResourceNeeds
}

func (s *needsSource) SetResourceNeeds(n model.ResourceNeeds) { s.needs = append(s.needs, n) }

// TestScreenReadsOnlyWhatItShows: a refresh asks the source for the
// badges' figures, the IO and pressure figures only while their columns
// are on screen, and every figure of the sandbox in the detail pane only.
func TestScreenReadsOnlyWhatItShows(t *testing.T) {
	src := &needsSource{fakeSource: fakeSource{views: fleetViews(1)}}
	m := newTestModel(t, src, nil)
	settle(m, size(120, 30), m.Init()())
	last := func() model.ResourceNeeds {
		t.Helper()
		settle(m, keys("r")...)
		if len(src.needs) == 0 {
			t.Fatal("the screen never said what it needs")
		}
		return src.needs[len(src.needs)-1]
	}
	if n := last(); n.Figures != model.BadgeFigures || len(n.Full) != 0 {
		t.Errorf("120 columns, no detail pane: asks for %+v, want the badges' figures only", n)
	}
	settle(m, size(250, 30))
	pressure := proc.HavePressureCPU | proc.HavePressureMemory | proc.HavePressureIO
	if n := last(); n.Figures != model.BadgeFigures|proc.HaveIO|pressure || len(n.Full) != 0 {
		t.Errorf("250 columns (IO and PRESSURE shown): asks for %+v", n)
	}
	settle(m, keys("d")...)
	sb := m.table.selected().sb
	if n := last(); sb == nil || len(n.Full) != 1 || !n.Full[sb.Key()] {
		t.Errorf("detail pane open on %v: asks for %+v, want every figure of it", sb, n)
	}
}

// TestScreenReadsFiguresOfRowsNearby: of a long list, the IO and pressure
// figures are asked for the rows on screen and a page either side only,
// and of every sandbox while the rows are in IO order; what is expanded
// is said; a row whose figures (or members' memory) were not read shows
// that they are coming, not that there are none.
func TestScreenReadsFiguresOfRowsNearby(t *testing.T) {
	v := benchView(100, 2)
	src := &needsSource{fakeSource: fakeSource{views: []*model.View{v}}}
	m := newTestModel(t, src, nil)
	settle(m, size(250, 20), m.Init()())
	last := func() model.ResourceNeeds {
		t.Helper()
		settle(m, keys("r")...)
		return src.needs[len(src.needs)-1]
	}
	n := last()
	if n.Shown == nil {
		t.Fatalf("a hundred sandboxes, IO shown: asks for %+v, want the rows nearby only", n)
	}
	h := m.table.height
	for i, r := range m.table.rows {
		if near := i < 2*h; n.Shown[r.sb.Key()] != near {
			t.Errorf("row %d of %d (screen of %d): asked %v, want %v", i, len(m.table.rows), h, n.Shown[r.sb.Key()], near)
		}
	}
	settle(m, keys("pgdown", "pgdown", "pgdown")...)
	if n := last(); n.Shown[m.table.rows[0].sb.Key()] || !n.Shown[m.table.selected().sb.Key()] {
		t.Errorf("three pages down: the first row asked %v, the selected %v", n.Shown[m.table.rows[0].sb.Key()], n.Shown[m.table.selected().sb.Key()])
	}
	if n := last(); len(n.Open) != 0 {
		t.Errorf("nothing expanded: asks as if %d sandboxes were", len(n.Open))
	}
	settle(m, keys("e")...)
	if n := last(); len(n.Open) != len(m.view.Sandboxes) {
		t.Errorf("every sandbox expanded: asks as if %d of %d were", len(n.Open), len(m.view.Sandboxes))
	}
	for m.table.sort != sortCPU {
		settle(m, keys("s")...)
	}
	if n := last(); !n.CPUOrder || n.Shown == nil {
		t.Errorf("sorted by CPU: asks for %+v, want the rows nearby and every CPU time of now", n)
	}
	for m.table.sort != sortIO {
		settle(m, keys("s")...)
	}
	if n := last(); n.CPUOrder {
		t.Errorf("sorted by IO: asks for every CPU time of now")
	}
	if n := last(); n.Shown != nil {
		t.Errorf("sorted by IO: asks for the figures of %d sandboxes only, want every one's", len(n.Shown))
	}

	pv := model.NewBuilder(testRules).Build(snapshot(0, fleetProcs()...), nil)
	wants, _ := model.ResourceWants(pv, model.ResourceNeeds{})
	pv.Snapshot.Resources = map[proc.CgroupKey]*proc.CgroupResources{}
	for _, w := range wants {
		pv.Snapshot.Resources[w.Key] = &proc.CgroupResources{Asked: model.BadgeFigures, Have: proc.HaveOOM}
	}
	var w model.Watch
	pv = w.Apply(pv)
	pv.Snapshot.Settled = map[string]bool{}
	for _, sb := range pv.Sandboxes {
		pv.Snapshot.Settled[sb.Cgroup] = sb.Cgroup != ""
	}
	if len(wants) == 0 {
		t.Fatal("the fleet has no dedicated cgroup")
	}
	for _, r := range buildRows(rowsInput{view: pv, io: &ioSampler{}}) {
		if r.kind != rowSandbox || (r.sb.Cgroup == "" && r.sb.Freezer == "") {
			continue
		}
		if r.io() != pending || r.pressure() != pending || !r.st.rssPending {
			t.Errorf("%s, IO, pressure and its members' memory not read: cells %q and %q, memory pending %v; want %q", r.sb.ID, r.io(), r.pressure(), r.st.rssPending, pending)
		}
	}
}

// TestCarriedMemberMemoryIsPending: a member whose stat the scan carried
// from an earlier one (a shim aside) shows that its memory is coming, not
// the memory it had then.
func TestCarriedMemberMemoryIsPending(t *testing.T) {
	v := model.NewBuilder(testRules).Build(snapshot(0, fleetProcs()...), nil)
	var p *proc.Process
	for _, sb := range v.Sandboxes {
		if len(sb.Members) > 0 {
			p = sb.Members[0].Process
			break
		}
	}
	if p == nil {
		t.Fatal("the fleet has no member")
	}
	col := column{id: colMem, w: 8}
	cellOf := func() string {
		var b strings.Builder
		(&table{}).processCell(&b, &highlights{}, col, &row{kind: rowMember, p: p}, &rowCtx{view: v})
		return strings.TrimSpace(b.String())
	}
	if got := cellOf(); got == pending {
		t.Fatalf("pid %d read by this scan: memory %q", p.PID, got)
	}
	v.Snapshot.Carried = []int{p.PID}
	if got := cellOf(); got != pending {
		t.Errorf("pid %d carried: memory %q, want %q", p.PID, got, pending)
	}
}
