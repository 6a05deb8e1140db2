package ui

import (
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/modeltest"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/teardown"
	"github.com/sandtop/sandtop/ui/format"
)

// TestDeepTrees: a chain of processes as deep as a sandbox may have pids
// (here 30,000, and a host chain beside it) is grouped, planned and drawn
// with a goroutine stack of 1 MiB, which a walk recursing a frame a level
// overflows; and every row's tree glyphs stay bounded, where a column a
// level made the listing grow with the square of the depth.
func TestDeepTrees(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(1 << 20))
	const depth = 30000
	var procs []*proc.Process
	procs = append(procs, modeltest.Proc(2, 1, "box --id deep"))
	for pid := 3; pid < depth+2; pid++ {
		procs = append(procs, modeltest.Proc(pid, pid-1, "sh -c x"))
	}
	for pid := 100000; pid < 100000+depth; pid++ { // no sandbox's: the host group
		procs = append(procs, modeltest.Proc(pid, max(pid-1, 1), "bash"))
	}
	snap := modeltest.Snapshot(proc.Snapshot{}, procs...)
	rules := model.Rules{{Name: "box", Exe: regexp.MustCompile(`^box$`), Flag: "--id"}}
	v := model.Build(snap, rules, nil)
	sb := v.SandboxOf(snap.Proc(2).ID())
	if sb == nil || len(sb.Members) != depth {
		t.Fatalf("the deep sandbox: %v", sb)
	}
	deepest := sb.Members[len(sb.Members)-1]
	if deepest.Depth != depth-1 {
		t.Errorf("the deepest member is at depth %d, want %d", deepest.Depth, depth-1)
	}
	if p := format.TreePrefix(deepest); len(p) > 4*3*format.MaxGlyphLevels || !strings.HasPrefix(p, "[+29966]") {
		t.Errorf("the deepest member's tree prefix is %d bytes: %.40q…", len(p), p)
	}
	plan, err := teardown.PlanSubtree(v, 100000, teardown.PlanOptions{})
	if err != nil || len(plan.Members) != depth {
		t.Fatalf("PlanSubtree of the host chain: %v members, %v", plan, err)
	}
	rows := appendHostTree(nil, v.Unattributed)
	total := 0
	for _, r := range rows {
		total += len(r.prefix)
	}
	if len(rows) < depth || total > len(rows)*4*3*format.MaxGlyphLevels {
		t.Errorf("host tree: %d rows, %d bytes of glyphs", len(rows), total)
	}
}
