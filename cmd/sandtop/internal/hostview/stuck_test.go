package hostview

import (
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// TestWatchRealStuck holds a real process in uninterruptible sleep: a
// vfork parent waits in D until its child execs or exits, and the child
// pauses. The sandbox is badged stuck once the process has been in D for
// the threshold across refreshes, with its wait channel named.
func TestWatchRealStuck(t *testing.T) {
	proctest.RequireRoot(t)
	if _, err := exec.LookPath("perl"); err != nil {
		proctest.SkipMissing(t, "no perl to vfork with")
	}
	// SYS_vfork is 58 and SYS_pause 34 on x86_64 only.
	if out, _ := exec.Command("uname", "-m").Output(); strings.TrimSpace(string(out)) != "x86_64" {
		t.Skip("the vfork helper uses x86_64 syscall numbers")
	}
	tag := "sandtop-stuck-" + randomHex(t, 6)
	c := exec.Command("perl", "-e", `$0 = "`+tag+`"; my $r = syscall(58); if ($r == 0) { syscall(34); POSIX::_exit(0); } sleep 300;`)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The process group is this test's own: the perl and its vfork child.
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		_ = c.Wait()
	})
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	rules := model.Rules{{Name: "stucktest", Argv: regexp.MustCompile(`^(?P<id>` + tag + `)`), ProcessGroup: true, Source: "test"}}
	b := model.NewBuilder(rules)
	rr := proc.NewResourceReader(sc.ProcRoot(), sc.Mounts())
	defer rr.Close()
	w := model.Watch{StuckAfter: 2 * time.Second}
	var prev *model.View
	look := func() *model.Sandbox {
		t.Helper()
		snap, err := sc.Scan()
		if err != nil {
			t.Fatal(err)
		}
		v := b.Build(snap, prev)
		wants, pids := model.ResourceWants(v, model.ResourceNeeds{})
		rr.Read(snap, wants, pids)
		prev = w.Apply(v)
		return prev.Sandbox("stucktest:" + tag)
	}
	deadline := time.Now().Add(10 * time.Second)
	var sb *model.Sandbox
	for {
		sb = look()
		if sb != nil && sb.Root != nil && sb.Root.State == 'D' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the vfork parent never showed in D: %+v", sb)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if sb.HasBadge(model.BadgeStuck) {
		t.Fatal("stuck at first sight of D")
	}
	time.Sleep(2500 * time.Millisecond)
	sb = look()
	if !sb.HasBadge(model.BadgeStuck) || len(sb.Trouble.Stuck) != 1 {
		t.Fatalf("2.5 s in D: badges %v", sb.Badges)
	}
	e := sb.Trouble.Stuck[0]
	t.Logf("stuck: pid %d %s waiting in %q", e.PID, e.Comm, e.Wchan)
	if e.PID != c.Process.Pid || e.Wchan == "" {
		t.Errorf("evidence %+v: want pid %d and its wait channel", e, c.Process.Pid)
	}
}
