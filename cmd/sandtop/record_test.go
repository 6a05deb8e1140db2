package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/recording"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// incident is a recording of a fleet that changed while it was recorded.
type incident struct {
	file    string
	fleet   fleet.Manifest
	start   time.Time
	orphan  string       // the sandbox whose supervisor was killed
	killed  [2]time.Time // before and after the supervisor's kill
	doomed  string       // the sandbox torn down
	torn    [2]time.Time // before and after its teardown
	churner string
	live    []liveList // what `list --json` printed while recording
}

// liveList is one `list --json` run during the recording.
type liveList struct {
	before, after time.Time
	doc           model.Document
}

// recordIncident records a fleet for 20 s while it changes: a vm0 runner
// (a supervisor) is killed at 5 s, a containerd sandbox is torn down with
// `sandtop kill` at 10 s, and a Docker container keeps forking throughout.
// `list --json` runs at 3, 7 and 15 s.
func recordIncident(t *testing.T) *incident {
	t.Helper()
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0, Supervisor: "own-runner"},
		{Name: "doomed", Runtime: fleet.Containerd},
		{Name: "churn", Runtime: fleet.Docker, Forker: true},
		{Name: "box", Runtime: fleet.Boxlite},
	}})
	m := f.Manifest()
	in := &incident{
		file: filepath.Join(t.TempDir(), "incident.rec"), fleet: m,
		orphan: m.Sandbox("vm").ID, doomed: m.Sandbox("doomed").ID, churner: m.Sandbox("churn").ID,
	}
	// The recorder is a process of its own, stopped with Ctrl-C (SIGINT)
	// once the last event is recorded: under load the events can run late,
	// and a fixed --duration could end before them.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rec := exec.Command(self, "-test.run=^TestRecorderChild$", "-test.count=1")
	rec.Env = append(os.Environ(), envRecordChild+"="+in.file)
	var recOut strings.Builder
	rec.Stdout, rec.Stderr = &recOut, &recOut
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = rec.Process.Kill()
			_ = rec.Wait()
		}
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if r, err := recording.Open(in.file); err == nil {
			n := r.Len()
			r.Close()
			if n > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recorder wrote no frame in a minute:\n%s", recOut.String())
		}
	}
	in.start = time.Now()
	until := func(d time.Duration) { time.Sleep(time.Until(in.start.Add(d))) }
	list := func() {
		l := liveList{before: time.Now()}
		l.doc = listJSON(t)
		l.after = time.Now()
		in.live = append(in.live, l)
	}
	until(3 * time.Second)
	list()
	until(5 * time.Second)
	in.killed[0] = time.Now()
	if err := f.KillSupervisor(in.orphan); err != nil {
		t.Fatal(err)
	}
	in.killed[1] = time.Now()
	until(7 * time.Second)
	list()
	until(10 * time.Second)
	in.torn[0] = time.Now()
	if code, out, errOut := sandtop(t, "kill", "--force", "--grace", "0", in.doomed); code != 0 {
		t.Fatalf("kill %s: exit %d\n%s%s", in.doomed, code, out, errOut)
	}
	in.torn[1] = time.Now()
	until(15 * time.Second)
	list()
	time.Sleep(time.Second)
	if err := rec.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = rec.Wait()
	stopped = true
	if err != nil || !strings.Contains(recOut.String(), "interrupted") {
		t.Fatalf("sandtop record, stopped with SIGINT: %v\n%s", err, recOut.String())
	}
	return in
}

// envRecordChild names the file TestRecorderChild records to.
const envRecordChild = "SANDTOP_TEST_RECORD_CHILD"

// TestRecorderChild is the recorder of TestRecordIncident: `sandtop record`
// until SIGINT.
func TestRecorderChild(t *testing.T) {
	file := os.Getenv(envRecordChild)
	if file == "" {
		t.Skip("runs only under TestRecordIncident")
	}
	if code := run([]string{"record", "-o", file, "--interval", "250ms", "--key-every", "4s"}, os.Stdin, os.Stdout, os.Stderr); code != 0 {
		t.Fatalf("sandtop record: exit %d", code)
	}
}

func TestRecordIncident(t *testing.T) {
	in := recordIncident(t)
	r, err := recording.Open(in.file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Verify(); err != nil || r.End() == nil || r.End().Stopped != "interrupted" {
		t.Fatalf("a recording stopped with Ctrl-C: damage %v, end %+v", err, r.End())
	}
	rules, err := model.ParseRules([]byte(r.Header.Rules), "recorded")
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for _, sb := range in.fleet.Sandboxes {
		ours[sb.ID] = true
	}
	t.Logf("%d frames, %d bytes", r.Len(), fileSize(t, in.file))

	t.Run("list --from --at equals list --json then", func(t *testing.T) {
		for _, l := range in.live {
			at := l.before.Format(time.RFC3339Nano)
			code, out, errOut := sandtop(t, "list", "--from", in.file, "--at", at, "--json")
			if code != 0 {
				t.Fatalf("list --from --at %s: exit %d: %s", at, code, errOut)
			}
			var rec model.Document
			if err := json.Unmarshal([]byte(out), &rec); err != nil {
				t.Fatal(err)
			}
			i, _ := r.At(l.before)
			compareDocs(t, r, i, l, rec, ours)
		}
	})

	// A frame's time is when its scan began; the scan ends before the next
	// frame's begins. A frame whose scan straddles an event may show either
	// side of it.
	t.Run("the orphan badge appears when the runner dies, the sandbox vanishes when torn down", func(t *testing.T) {
		b := model.NewBuilder(rules)
		var v *model.View
		frames := r.Frames()
		for i, f := range frames {
			snap, err := r.Snapshot(i)
			if err != nil {
				t.Fatal(err)
			}
			end := f.Time.Add(time.Hour)
			if i+1 < len(frames) {
				end = frames[i+1].Time
			}
			v = b.Build(snap, v)
			orphan := v.Sandbox(in.orphan)
			if orphan == nil {
				t.Fatalf("frame %d (%s): no sandbox %s", i, f.Time, in.orphan)
			}
			switch has := orphan.HasBadge(model.BadgeOrphan); {
			case end.Before(in.killed[0]) && has:
				t.Errorf("frame %d at %s: orphan before the runner was killed at %s", i, f.Time, in.killed[0])
			case f.Time.After(in.killed[1]) && !has:
				t.Errorf("frame %d at %s: not an orphan after the runner was killed at %s", i, f.Time, in.killed[1])
			}
			switch gone := v.Sandbox(in.doomed) == nil; {
			case end.Before(in.torn[0]) && gone:
				t.Errorf("frame %d at %s: %s gone before its teardown", i, f.Time, in.doomed)
			case f.Time.After(in.torn[1]) && !gone:
				t.Errorf("frame %d at %s: %s still there after its teardown", i, f.Time, in.doomed)
			}
		}
	})

	t.Run("replay in tmux: the badge comes, the sandbox goes, no signal leaves", func(t *testing.T) {
		replayInTmux(t, in, r)
	})

	t.Run("out of range", func(t *testing.T) {
		for _, at := range []string{"+1h", "-1h", in.start.Add(-time.Hour).Format(time.RFC3339)} {
			code, _, errOut := sandtop(t, "list", "--from", in.file, "--at", at)
			if code != exitUsage || !strings.Contains(errOut, "outside the recording, which runs from") {
				t.Errorf("--at %s: exit %d, %q", at, code, errOut)
			}
		}
	})
}

// compareDocs holds a recorded document to the live one, for the fleet's
// sandboxes (the host is shared with other tests). Fields that change by
// the millisecond (CPU, RSS, the resources block, threads, state, the zombie flag of a child
// caught exiting, the unattributed count, the time) are left out. The
// frame is at most an interval older than the live scan, so a process may
// be in one and not the other only if the recording shows why: born after
// the frame (no frame up to it has it), or exited before the live scan (no
// frame after the scan has it).
func compareDocs(t *testing.T, r *recording.Reader, frame int, l liveList, rec model.Document, ours map[string]bool) {
	t.Helper()
	seenBy := func(id proc.Identity, from, to int) bool {
		for i := from; i <= to && i < r.Len(); i++ {
			snap, err := r.Snapshot(i)
			if err != nil {
				t.Fatal(err)
			}
			if p := snap.Proc(id.PID); p != nil && p.Start == id.Start {
				return true
			}
		}
		return false
	}
	afterScan := frame + 1
	for afterScan < r.Len() && !r.Frames()[afterScan].Time.After(l.after) {
		afterScan++
	}
	brief := func(id proc.Identity) bool {
		return (frame > 0 && !seenBy(id, frame-1, frame-1)) || !seenBy(id, afterScan, afterScan)
	}
	byID := func(d model.Document) map[string]model.SandboxJSON {
		m := map[string]model.SandboxJSON{}
		for _, sb := range d.Sandboxes {
			if ours[sb.ID] {
				m[sb.ID] = sb
			}
		}
		return m
	}
	live, got := byID(l.doc), byID(rec)
	if len(live) == 0 {
		t.Fatal("the live list shows none of the fleet's sandboxes")
	}
	for id, want := range live {
		sb, ok := got[id]
		if !ok {
			t.Errorf("at %s: sandbox %s is missing from the recording", l.before, id)
			continue
		}
		procs := func(s model.SandboxJSON) map[proc.Identity]model.ProcessJSON {
			m := map[proc.Identity]model.ProcessJSON{}
			for _, p := range s.Processes {
				m[proc.Identity{PID: p.PID, Start: p.StartTicks}] = p
			}
			return m
		}
		lp, rp := procs(want), procs(sb)
		for pid, p := range lp {
			q, ok := rp[pid]
			switch {
			case !ok && seenBy(pid, 0, frame):
				t.Errorf("at %s: %s: %v (%s) was alive, and recorded before, but not in the frame", l.before, id, pid, p.Comm)
			case ok && !sameProcess(p, q, brief(pid)):
				t.Errorf("at %s: %s: %v differs:\nlive     %+v\nrecorded %+v", l.before, id, pid, p, q)
			}
		}
		for pid, q := range rp {
			if _, ok := lp[pid]; !ok && seenBy(pid, afterScan, afterScan) {
				t.Errorf("at %s: %s: %v (%s) is recorded and alive after the live scan, but the live list lacks it", l.before, id, pid, q.Comm)
			}
		}
		strip := func(s model.SandboxJSON) model.SandboxJSON {
			// resources are figures that change by the millisecond, and
			// a recording keeps no network namespaces (docs/recording.md).
			s.Processes, s.Resources, s.Network = nil, nil, nil
			s.Badges = slices.DeleteFunc(slices.Clone(s.Badges), func(b model.Badge) bool { return b == model.BadgeZombie })
			return s
		}
		if a, b := strip(want), strip(sb); !jsonEqual(a, b) {
			t.Errorf("at %s: sandbox %s differs:\nlive     %+v\nrecorded %+v", l.before, id, a, b)
		}
	}
	for id := range got {
		if _, ok := live[id]; !ok {
			t.Errorf("at %s: sandbox %s is in the recording, not in the live list", l.before, id)
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("at %s (frame %d, %s): %d sandboxes of the fleet equal", l.before.Format("15:04:05.000"), frame+1, r.Frames()[frame].Time.Format("15:04:05.000"), len(live))
}

// sameProcess compares two reads of one process. A brief one (born since
// the frame before, or gone by the frame after the live scan) may have been
// read before and after its exec, or while exiting, when the kernel shows
// an empty cmdline: its comm and argv are left out.
func sameProcess(a, b model.ProcessJSON, brief bool) bool {
	a.CPUSeconds, b.CPUSeconds, a.RSSBytes, b.RSSBytes, a.Threads, b.Threads = 0, 0, 0, 0, 0, 0
	a.State, b.State, a.Zombie, b.Zombie = "", "", false, false
	if brief {
		a.Comm, b.Comm, a.Argv, b.Argv = "", "", nil, nil
	}
	return jsonEqual(a, b)
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	r, err := recording.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fs := r.Frames()
	if len(fs) == 0 {
		return 0
	}
	return fs[len(fs)-1].Offset + fs[len(fs)-1].Size
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1GiB": 1 << 30, "500MiB": 500 << 20, "100MB": 100e6, "64K": 64 << 10, "1048576": 1 << 20, "0": 0, "1.5 GiB": 3 << 29, "10b": 10,
	} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("%q: %d, %v; want %d", in, b, err, want)
		}
	}
	for _, bad := range []string{"", "GiB", "-1MiB", "1XB", "lots"} {
		var b byteSize
		if err := b.Set(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// viewSource hands out views of fixed snapshots, as a scanner would.
type viewSource struct {
	snaps []*proc.Snapshot
	i     int
}

func (s *viewSource) Scan() (*model.View, error) {
	snap := s.snaps[min(s.i, len(s.snaps)-1)]
	s.i++
	return model.Build(snap, nil, nil), nil
}

// TestRecordingSource checks the live screen's --record: every view it
// shows goes to the file, which reads back.
func TestRecordingSource(t *testing.T) {
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var snaps []*proc.Snapshot
	for range 3 {
		s, err := sc.Scan()
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	path := filepath.Join(t.TempDir(), "live.rec")
	g := &globals{procRoot: "/proc"}
	rec, err := createRecording(path, g, model.Presets(), "sandtop (live screen)", time.Second, time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	src := &recordingSource{Source: &viewSource{snaps: snaps}, rec: rec, path: path}
	for range snaps {
		if _, err := src.Scan(); err != nil {
			t.Fatal(err)
		}
	}
	// The screen's header shows the file and its size.
	if st := src.Recording(); st.Path != path || st.Size <= 0 || st.Stopped != "" {
		t.Errorf("recording state %+v", st)
	}
	var msg strings.Builder
	if err := src.close(&msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg.String(), "recorded 3 snapshots") {
		t.Errorf("close says %q", msg.String())
	}
	if _, err := createRecording(path, g, model.Presets(), "x", time.Second, time.Minute, 0); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("recording over an existing file: %v", err)
	}
	r, err := recording.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Len() != 3 || r.Damage() != nil || r.Header.Recorder != "sandtop (live screen)" {
		t.Fatalf("%d frames, damage %v, header %+v", r.Len(), r.Damage(), r.Header)
	}
	for i, want := range snaps {
		got, err := r.Snapshot(i)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Procs) != len(want.Procs) || !got.Time.Equal(want.Time) {
			t.Errorf("frame %d: %d processes at %s, want %d at %s", i, len(got.Procs), got.Time, len(want.Procs), want.Time)
		}
	}
}

// envReplayChild names the recording TestReplayChild replays, and the file
// it writes its pid to.
const envReplayChild = "SANDTOP_TEST_REPLAY_CHILD"

// TestReplayChild is the program under test in the tmux replay check:
// `sandtop replay FILE`.
func TestReplayChild(t *testing.T) {
	env := os.Getenv(envReplayChild)
	if env == "" {
		t.Skip("runs only under TestRecordIncident")
	}
	file, pidFile, _ := strings.Cut(env, ",")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"replay", file}, os.Stdin, os.Stdout, os.Stderr); code != 0 {
		t.Fatalf("sandtop replay: exit %d", code)
	}
}

// replayInTmux replays the incident on a real terminal, under strace, and
// checks what the screen shows at the moments around each event, and that
// no signal left the program.
func replayInTmux(t *testing.T, in *incident, r *recording.Reader) {
	for _, tool := range []string{"strace", "tmux"} {
		if _, err := exec.LookPath(tool); err != nil {
			proctest.SkipMissing(t, "%s not installed (make test-deps installs it)", tool)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trace, pidFile := filepath.Join(dir, "strace.out"), filepath.Join(dir, "pid")
	sock := filepath.Join(dir, "tmux") // -S: no socket outlives the test
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })
	prog := fmt.Sprintf("env %s=%s,%s TERM=xterm-256color TZ=UTC strace -f -qq -o %s -e trace=kill,tkill,tgkill,pidfd_send_signal,rt_sigqueueinfo,rt_tgsigqueueinfo,pidfd_open %s -test.run='^TestReplayChild$' -test.count=1 2>%s",
		envReplayChild, in.file, pidFile, trace, self, filepath.Join(dir, "stderr"))
	if out, err := tmux("new-session", "-d", "-s", "replay", "-x", "200", "-y", "30", prog); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	screen := func() string { out, _ := tmux("capture-pane", "-p", "-t", "replay"); return out }
	send := func(keys ...string) {
		t.Helper()
		for _, k := range keys {
			if out, err := tmux(append([]string{"send-keys", "-t", "replay"}, tmuxKey(k)...)...); err != nil {
				t.Fatalf("send %q: %v: %s", k, err, out)
			}
		}
	}
	typeLine := func(s string) {
		t.Helper()
		if out, err := tmux("send-keys", "-t", "replay", "-l", s); err != nil {
			t.Fatalf("type %q: %v: %s", s, err, out)
		}
		send("enter")
	}
	wait := func(what string, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			s := screen()
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("screen never showed %s:\n%s", what, s)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	frames := r.Frames()
	n := len(frames)
	wait("the first frame", func(s string) bool { return strings.Contains(s, fmt.Sprintf("frame 1/%d", n)) })
	send("t", "t")
	wait("two frames on", func(s string) bool { return strings.Contains(s, fmt.Sprintf("frame 3/%d", n)) })

	// jumpTo jumps to frame i by its time and waits for it.
	jumpTo := func(i int) string {
		t.Helper()
		send("j")
		typeLine(frames[i].Time.UTC().Format(time.RFC3339Nano))
		return wait(fmt.Sprintf("frame %d", i+1), func(s string) bool {
			return strings.Contains(s, fmt.Sprintf("frame %d/%d", i+1, n)) &&
				strings.Contains(s, frames[i].Time.UTC().Format("2006-01-02 15:04:05.000"))
		})
	}
	// lastBefore is the last frame whose scan ended before t (the next
	// frame began before it); firstAfter the first that began after t.
	lastBefore := func(at time.Time) int {
		i := 0
		for i+2 < n && frames[i+2].Time.Before(at) {
			i++
		}
		return i
	}
	firstAfter := func(at time.Time) int {
		i := 0
		for i < n-1 && !frames[i].Time.After(at) {
			i++
		}
		return i
	}
	row := func(s, id string) string {
		for _, l := range strings.Split(s, "\n") {
			// A table row has the expand mark; the filter lines name the ID too.
			if strings.Contains(l, id[:12]) && strings.ContainsAny(l, "▸▾") {
				return l
			}
		}
		return ""
	}

	send("/")
	typeLine("id:" + in.orphan)
	before := jumpTo(lastBefore(in.killed[0]))
	if l := row(before, in.orphan); l == "" || strings.Contains(l, "orphan") {
		t.Errorf("before the runner was killed, the vm0 row is %q:\n%s", l, before)
	}
	after := jumpTo(firstAfter(in.killed[1]))
	if l := row(after, in.orphan); !strings.Contains(l, "orphan") {
		t.Errorf("after the runner was killed, the vm0 row is %q:\n%s", l, after)
	}
	t.Logf("replay before the runner's kill:\n%s", compact(before))
	t.Logf("replay after the runner's kill:\n%s", compact(after))

	send("/", "ctrl+u")
	typeLine("id:" + in.doomed)
	if s := jumpTo(lastBefore(in.torn[0])); row(s, in.doomed) == "" {
		t.Errorf("before its teardown, %s is not shown:\n%s", in.doomed, s)
	}
	if s := jumpTo(firstAfter(in.torn[1])); row(s, in.doomed) != "" || !strings.Contains(s, "no sandbox matches") {
		t.Errorf("after its teardown, %s is still shown:\n%s", in.doomed, s)
	}
	// Play at 60x to the end, with every other key the screen has.
	send("esc", "esc", "+", "+", " ")
	wait("the end", func(s string) bool { return strings.Contains(s, fmt.Sprintf("frame %d/%d", n, n)) })
	keys, _ := boundKeys(t)
	for _, k := range keys {
		send(k)
	}
	send("esc", "esc", "q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := tmux("has-session", "-t", "replay"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replay did not quit:\n%s", screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the replay never wrote its pid: %v", err)
	}
	_, foreign := signalCalls(string(data), string(pid))
	for _, l := range foreign {
		t.Errorf("replay made a signal call: %s", l)
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 2 {
		t.Error("strace recorded nothing: the check proved nothing")
	}
}

// compact drops a screen's blank lines, for the log.
func compact(screen string) string {
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimRight(l, " "))
		}
	}
	return strings.Join(out, "\n")
}
