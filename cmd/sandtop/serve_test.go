package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/assets"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/remote"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc/proctest"
)

// envServeChild carries the arguments of `sandtop serve` to the child test
// binary; envServePID names the file it writes its pid to (strace's pid is
// not the one to signal).
const (
	envServeChild = "SANDTOP_SERVE_CHILD"
	envServePID   = "SANDTOP_SERVE_PID"
)

// TestServeChild is the program under test: `sandtop serve`, run by the
// test binary itself so that no separate build is needed.
func TestServeChild(t *testing.T) {
	args := os.Getenv(envServeChild)
	if args == "" {
		t.Skip("runs only under the serve tests")
	}
	if f := os.Getenv(envServePID); f != "" {
		if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if h := os.Getenv(envServeHost); h != "" {
		// A host of its own: a fleet, then serve, in this pid namespace.
		if err := serveAsHost(t, h, args); err != nil {
			t.Fatal(err)
		}
		return
	}
	if c := os.Getenv(envServeConfine); c != "" {
		// Confine this process as the pod would be, then become serve
		// in it (execve keeps the pid).
		if err := confine(c); err != nil {
			t.Fatalf("confine: %v", err)
		}
	}
	if code := run(append([]string{"serve"}, strings.Fields(args)...), os.Stdin, os.Stdout, os.Stderr); code != 0 {
		t.Fatalf("sandtop serve: exit %d", code)
	}
}

// syncBuffer collects a child's stderr while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// served is a running `sandtop serve`.
type served struct {
	url string // http://127.0.0.1:PORT
	pid int    // serve's own pid
	// pidFile is where the child test binary wrote pid.
	pidFile string
	stderr  *syncBuffer
	done    chan error
}

// startServe starts `sandtop serve --listen 127.0.0.1:0 args…` (under the
// wrap command, such as strace, when given) and returns once it listens.
// It is stopped by its pid with SIGTERM when the test ends, SIGKILL if it
// does not exit.
func startServe(t *testing.T, wrap []string, args ...string) *served {
	t.Helper()
	return startServeWith(t, nil, nil, wrap, args...)
}

// startServeWith is startServe with more environment for the child and
// attributes for its process (a namespace of its own, say).
func startServeWith(t *testing.T, env []string, sys *syscall.SysProcAttr, wrap []string, args ...string) *served {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "serve.pid")
	argv := append(slices.Clone(wrap), self, "-test.run=^TestServeChild$", "-test.count=1")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(),
		envServeChild+"="+strings.Join(append([]string{"--listen", "127.0.0.1:0"}, args...), " "),
		envServePID+"="+pidFile), env...)
	cmd.SysProcAttr = sys
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{stderr: &syncBuffer{}, done: make(chan error, 1), pidFile: pidFile}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(s.stderr, line)
			if u, ok := strings.CutPrefix(line, "sandtop serve: "); ok && strings.HasPrefix(u, "http://") {
				u, _, _ = strings.Cut(u, "/metrics")
				listening <- u
			}
		}
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if s.pid != 0 {
			_ = syscall.Kill(s.pid, syscall.SIGTERM)
		}
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			t.Errorf("sandtop serve (pid %d) ignored SIGTERM for 15 s; killing it", s.pid)
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	select {
	case s.url = <-listening:
	case err := <-s.done:
		s.done <- err
		t.Fatalf("sandtop serve exited before listening: %v\n%s", err, s.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("sandtop serve did not listen within 30 s:\n%s", s.stderr)
	}
	if len(wrap) == 0 {
		// The child is serve (a confined one execs, keeping its pid), and
		// in a pid namespace of its own the pid it would write is 1 there.
		s.pid = cmd.Process.Pid
		return s
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("serve wrote no pid: %v", err)
	}
	s.pid, _ = strconv.Atoi(string(pid))
	return s
}

// stop ends serve by its pid and waits for it; the test's cleanup then
// has nothing left to do.
func (s *served) stop(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(s.pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		s.done <- err
	case <-time.After(15 * time.Second):
		t.Fatalf("sandtop serve (pid %d) ignored SIGTERM for 15 s", s.pid)
	}
	s.pid = 0
}

func httpGet(t *testing.T, method, u string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// lookTool finds a tool the tests drive; `make test-deps` installs them.
func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		proctest.SkipMissing(t, "%s not installed (make test-deps installs it)", name)
	}
	return p
}

// TestServeLive runs the real program on the real host: promtool checks a
// live scrape, every endpoint answers as documented, and the document is
// list --json's for the same fleet.
func TestServeLive(t *testing.T) {
	promtool := lookTool(t, "promtool")
	var man fleet.Manifest
	if os.Geteuid() == 0 {
		man = fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
			{Name: "vm", Runtime: fleet.VM0},
			{Name: "orphan", Runtime: fleet.Containerd, Orphan: true},
			{Name: "zombie", Runtime: fleet.Docker, Zombies: 2},
		}}).Manifest()
	}
	s := startServe(t, nil, "--interval", "1s", "--per-sandbox")
	waitHealthy(t, s)

	for _, accept := range []string{"text/plain", "application/openmetrics-text"} {
		code, h, body := httpGet(t, "GET", s.url+"/metrics", "Accept", accept)
		if code != 200 || !strings.Contains(h.Get("Content-Type"), accept) {
			t.Fatalf("Accept %s: %d %s", accept, code, h.Get("Content-Type"))
		}
		if accept != "text/plain" {
			continue
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("promtool check metrics on a live scrape: %v\n%s", err, out)
		}
		for _, want := range []string{"sandtop_sandboxes{", "sandtop_sandboxes_badged{", "sandtop_build_info{", "sandtop_scan_duration_seconds_bucket", "sandtop_last_scan_timestamp_seconds "} {
			if !strings.Contains(body, want) {
				t.Errorf("live scrape lacks %s", want)
			}
		}
	}
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/healthz", 200}, {"HEAD", "/metrics", 200}, {"GET", "/", 200}, {"GET", "/kill", 404},
		{"POST", "/metrics", 405}, {"DELETE", "/api/v1/sandboxes", 405}, {"PUT", "/healthz", 405},
	} {
		if code, _, _ := httpGet(t, c.method, s.url+c.path); code != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, code, c.want)
		}
	}

	if os.Geteuid() != 0 {
		return
	}
	// The document: list --json's for the same fleet (times, CPU and RSS
	// move between the two scans, so compare what must not).
	for _, all := range []bool{false, true} {
		path, args := "/api/v1/sandboxes", []string{}
		if all {
			path, args = path+"?all=1", []string{"--all"}
		}
		compareDocuments(t, man, all, func() model.Document {
			_, _, body := httpGet(t, "GET", s.url+path)
			var d model.Document
			if err := json.Unmarshal([]byte(body), &d); err != nil {
				t.Fatalf("%s: %v\n%s", path, err, body)
			}
			return d
		}, func() model.Document { return listJSON(t, args...) })
	}
}

// compareDocuments checks that the fleet's sandboxes read the same in
// both documents, retrying while the two scans straddle a change.
func compareDocuments(t *testing.T, man fleet.Manifest, all bool, served, listed func() model.Document) {
	t.Helper()
	shape := func(d model.Document) string {
		var out []string
		for _, sb := range man.Sandboxes {
			s := find(d, sb.ID)
			if s == nil {
				out = append(out, sb.ID+" missing")
				continue
			}
			var pids []int
			for _, p := range s.Processes {
				pids = append(pids, p.PID)
			}
			out = append(out, fmt.Sprintf("%s %s root=%d sup=%d badges=%v cgroup=%s pids=%v", s.ID, s.Runtime, s.RootPID, s.SupervisorPID, s.Badges, s.Cgroup, pids))
		}
		if all && len(d.UnattributedProcesses) == 0 {
			out = append(out, "no unattributed processes listed")
		}
		return strings.Join(out, "\n")
	}
	var a, b string
	for range 20 {
		a, b = shape(served()), shape(listed())
		if a == b {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Errorf("all=%v: the served document and list --json disagree on the fleet:\n--- served\n%s\n--- list --json\n%s", all, a, b)
}

func waitHealthy(t *testing.T, s *served) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _, body := httpGet(t, "GET", s.url+"/healthz")
		if code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz: %d %s\n%s", code, body, s.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestServeFlags(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--interval", "10ms"},
		{"serve", "--per-sandbox-limit", "0"},
		{"serve", "--listen", "256.0.0.1:1"},
	} {
		if code, _, errOut := sandtop(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitUsage, errOut)
		}
	}
}

// The unit's ExecStart must be a command line this sandtop accepts.
func TestUnitExecStartParses(t *testing.T) {
	for _, name := range assets.Units() {
		unit, err := assets.Unit(name)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^ExecStart=/usr/local/bin/sandtop (.*)$`).FindSubmatch(unit)
		if m == nil {
			t.Fatalf("%s: no ExecStart running /usr/local/bin/sandtop", name)
		}
		args := strings.Fields(string(m[1]))
		cmd, rest, err := newRootCmd().Find(args)
		if err != nil || cmd.Name() != name {
			t.Fatalf("%s: ExecStart %v finds command %v: %v", name, args, cmd.Name(), err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("%s: ExecStart flags %v: %v", name, rest, err)
		}
	}
	if code, out, _ := sandtop(t, "config", "systemd"); code != 0 || !strings.Contains(out, "sandtop serve") {
		t.Errorf("config systemd: exit %d\n%s", code, out)
	}
	if code, _, errOut := sandtop(t, "config", "systemd", "nope"); code != exitUsage || !strings.Contains(errOut, "serve") {
		t.Errorf("config systemd nope: exit %d, %s", code, errOut)
	}
	if code, out, _ := sandtop(t, "config", "alerts"); code != 0 || !bytes.Equal([]byte(out), assets.Alerts()) {
		t.Errorf("config alerts: exit %d, or not the embedded rules", code)
	}
	if code, out, _ := sandtop(t, "config", "grafana"); code != 0 || !bytes.Equal([]byte(out), assets.Grafana()) {
		t.Errorf("config grafana: exit %d, or not the embedded dashboard", code)
	}
}

// promServer is a Prometheus server the test started.
type promServer struct {
	url string
	t   *testing.T
}

// freePort returns a loopback port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startPrometheus starts Debian's prometheus on a free loopback port with
// its own storage, scraping the targets every second as job "sandtop" and
// evaluating the alert rules (assets.Alerts(), or rules made from them).
// It is stopped by its pid when the test ends.
func startPrometheus(t *testing.T, rules []byte, targets ...string) *promServer {
	t.Helper()
	bin := lookTool(t, "prometheus")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alerts.yml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [alerts.yml]
scrape_configs:
  - job_name: sandtop
    static_configs:
      - targets: [%s]
`, strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var logs syncBuffer
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
		"--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Errorf("prometheus (pid %d) ignored SIGTERM for 20 s; killing it", cmd.Process.Pid)
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	p := &promServer{url: "http://" + addr, t: t}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		select {
		case err := <-done:
			t.Fatalf("prometheus exited: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within 60 s:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// query runs an instant query and returns the value of each series, keyed
// by its labels' values joined with ",".
func (p *promServer) query(expr string) map[string]float64 { return p.queryAt(expr, time.Time{}) }

// queryAt runs an instant query at time at (zero: now), as `sandtop list
// --prometheus` does.
func (p *promServer) queryAt(expr string, at time.Time) map[string]float64 {
	p.t.Helper()
	if at.IsZero() {
		at = time.Now()
	}
	base, err := url.Parse(p.url)
	if err != nil {
		p.t.Fatal(err)
	}
	series, err := remote.Query(context.Background(), base, expr, at)
	if err != nil {
		p.t.Fatal(err)
	}
	out := map[string]float64{}
	for _, s := range series {
		var keys []string
		for k := range s.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var vals []string
		for _, k := range keys {
			vals = append(vals, s.Labels[k])
		}
		out[strings.Join(vals, ",")] = s.Value
	}
	return out
}

// scalar runs a query that yields one series (or none: ok false).
func (p *promServer) scalar(expr string) (float64, bool) {
	p.t.Helper()
	for _, v := range p.query(expr) {
		return v, true
	}
	return 0, false
}

// fleetCounts are the figures both Prometheus and list --json give.
type fleetCounts struct{ sandboxes, orphan, zombie, paused float64 }

func countsOf(d model.Document) fleetCounts {
	var c fleetCounts
	for _, sb := range d.Sandboxes {
		c.sandboxes++
		for _, b := range sb.Badges {
			switch b {
			case model.BadgeOrphan:
				c.orphan++
			case model.BadgeZombie:
				c.zombie++
			case model.BadgePaused:
				c.paused++
			}
		}
	}
	return c
}

// counts reads the fleet counts at time at (zero: now).
func (p *promServer) counts(at time.Time) (fleetCounts, bool) {
	p.t.Helper()
	q := func(expr string) (float64, bool) {
		if at.IsZero() {
			return p.scalar(expr)
		}
		for _, v := range p.queryAt(expr, at) {
			return v, true
		}
		return 0, false
	}
	var c fleetCounts
	var ok [4]bool
	c.sandboxes, ok[0] = q(`sum(sandtop_sandboxes{job="sandtop"})`)
	c.orphan, ok[1] = q(`sum(sandtop_sandboxes_badged{job="sandtop",badge="orphan"})`)
	c.zombie, ok[2] = q(`sum(sandtop_sandboxes_badged{job="sandtop",badge="zombie"})`)
	c.paused, ok[3] = q(`sum(sandtop_sandboxes_badged{job="sandtop",badge="paused"})`)
	return c, ok == [4]bool{true, true, true, true}
}

// sameView fetches serve's document of its last view, waits until
// Prometheus has scraped that view (its sandtop_last_scan_timestamp_seconds
// falls in the document's second), and returns Prometheus' counts at that
// scrape beside the document's.
func (p *promServer) sameView(s *served) (prom, doc fleetCounts, ok bool) {
	p.t.Helper()
	_, _, body := httpGet(p.t, "GET", s.url+"/api/v1/sandboxes")
	var d model.Document
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		p.t.Fatalf("/api/v1/sandboxes: %v", err)
	}
	want := d.Time.Unix()
	for range 20 {
		time.Sleep(500 * time.Millisecond)
		// Each sample of the last 30 s: when it was scraped, and the scan
		// it carried.
		for _, smp := range p.samples(`sandtop_last_scan_timestamp_seconds{job="sandtop"}[30s]`) {
			if int64(smp.value) == want {
				prom, ok = p.counts(smp.at)
				return prom, countsOf(d), ok
			}
		}
	}
	return fleetCounts{}, fleetCounts{}, false
}

// fastAlerts are the embedded rules with the badge alerts' times scaled
// from minutes to seconds (15 m: 15 s), for a test to watch them fire.
func fastAlerts(t *testing.T) []byte {
	t.Helper()
	re := regexp.MustCompile(`(time\(\) - sandtop_badged_since_timestamp_seconds\{[^}]*\} > )(\d+)`)
	n := 0
	out := re.ReplaceAllFunc(assets.Alerts(), func(m []byte) []byte {
		sub := re.FindSubmatch(m)
		secs, _ := strconv.Atoi(string(sub[2]))
		n++
		return append(slices.Clone(sub[1]), strconv.Itoa(secs/60)...)
	})
	if n < 4 {
		t.Fatalf("fastAlerts: scaled %d badge alerts, want at least 4", n)
	}
	return out
}

// waitAlert polls ALERTS until alertname for runtime is firing (or, with
// firing false, until it is not) and returns when it saw that; past the
// deadline it fails the test.
func (p *promServer) waitAlert(t *testing.T, alertname, runtime string, firing bool, deadline time.Time) time.Time {
	t.Helper()
	q := fmt.Sprintf(`ALERTS{alertname=%q,runtime=%q,alertstate="firing"}`, alertname, runtime)
	for {
		now := time.Now()
		if got := len(p.query(q)) > 0; got == firing {
			return now
		}
		if now.After(deadline) {
			t.Fatalf("%s for %s: firing still %v at the deadline", alertname, runtime, !firing)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

type sample struct {
	at    time.Time
	value float64
}

// samples runs a range-vector query and returns the samples of its one
// series.
func (p *promServer) samples(expr string) []sample {
	p.t.Helper()
	var r struct {
		Data struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	p.get("/api/v1/query?query="+url.QueryEscape(expr), &r)
	var out []sample
	for _, s := range r.Data.Result {
		for _, v := range s.Values {
			ts, _ := v[0].(float64)
			f, err := strconv.ParseFloat(v[1].(string), 64)
			if err != nil {
				p.t.Fatal(err)
			}
			out = append(out, sample{at: time.UnixMilli(int64(ts * 1000)), value: f})
		}
	}
	return out
}

func (p *promServer) get(path string, into any) {
	p.t.Helper()
	resp, err := http.Get(p.url + path)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		p.t.Fatal(err)
	}
}

// TestServePrometheus is the whole path with real parts: a sandsim fleet,
// `sandtop serve`, and Debian's Prometheus scraping it every second and
// evaluating the embedded alert rules. What Prometheus holds must match
// `sandtop list --json` of the same host; killing a supervisor must show
// in Prometheus as one more orphan, and its alert must fire when it has
// been an orphan for the alert's time (rules scaled to a minute a
// second), not when the sandbox has existed that long; after serve
// restarts, the alert waits again.
func TestServePrometheus(t *testing.T) {
	lookTool(t, "prometheus")
	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0},
		{Name: "late", Runtime: fleet.VM0, Supervisor: "late"},
		{Name: "orphan", Runtime: fleet.Containerd, Orphan: true},
		{Name: "paused", Runtime: fleet.Cube, Pause: fleet.PauseFreeze},
		{Name: "zombie", Runtime: fleet.Docker, Zombies: 2},
	}})
	fleetStarted := time.Now()
	man := f.Manifest()
	// Scans 2 s apart, so no two share the second the document names; a
	// fixed address, so that Prometheus finds serve again after a restart.
	serveArgs := []string{"--interval", "2s", "--per-sandbox", "--per-sandbox-limit", "100000",
		"--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	s := startServe(t, nil, serveArgs...)
	waitHealthy(t, s)
	p := startPrometheus(t, fastAlerts(t), strings.TrimPrefix(s.url, "http://"))

	// Prometheus lags serve by a scrape and serve lags the host by a scan.
	// First choice: list --json read the same before and after the query,
	// so the host held still. On a shared host where other work starts
	// and stops sandboxes all the time, compare with the document of the
	// very view Prometheus scraped: /api/v1/sandboxes (the list --json
	// document, the same bytes: TestHandlerEndpoints), matched to the
	// scrape by sandtop_last_scan_timestamp_seconds.
	agree := func(what string, check func(fleetCounts) error) fleetCounts {
		t.Helper()
		var last string
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			before := countsOf(listJSON(t))
			time.Sleep(2500 * time.Millisecond)
			got, ok := p.counts(time.Time{})
			after := countsOf(listJSON(t))
			how := "list --json, the host held still"
			if ok && before != after {
				if got, after, ok = p.sameView(s); !ok {
					last = "no scrape of the served view found in Prometheus"
					continue
				}
				how = "the served list --json document of the view Prometheus scraped"
			}
			switch {
			case !ok:
				last = "no samples in Prometheus yet"
			case got != after:
				last = fmt.Sprintf("Prometheus %+v, %s %+v", got, how, after)
			default:
				if err := check(got); err != nil {
					last = err.Error()
					continue
				}
				t.Logf("%s: Prometheus and %s agree: %+v", what, how, got)
				return got
			}
		}
		t.Fatalf("%s: %s", what, last)
		return fleetCounts{}
	}
	start := agree("fleet up", func(c fleetCounts) error {
		if c.orphan < 1 || c.paused < 1 || c.zombie < 1 {
			return fmt.Errorf("the fleet's orphan, paused and zombie sandboxes are not all counted: %+v", c)
		}
		return nil
	})
	for _, c := range []struct {
		name  string
		badge model.Badge
	}{{"orphan", model.BadgeOrphan}, {"paused", model.BadgePaused}, {"zombie", model.BadgeZombie}} {
		id := man.Sandbox(c.name).ID
		if v, ok := p.scalar(fmt.Sprintf(`sandtop_sandbox_badge{id=%q,badge=%q}`, id, c.badge)); !ok || v != 1 {
			t.Errorf("Prometheus has no %s badge for sandbox %s", c.badge, c.name)
		}
	}
	// The resources metrics reach Prometheus too: the containerd
	// sandbox's cgroup (one of its own) has its tasks and memory; its
	// shim, outside that cgroup, is the overhead; no sandsim cgroup sets
	// a memory limit.
	orphanID := man.Sandbox("orphan").ID
	if v, ok := p.scalar(fmt.Sprintf(`sandtop_sandbox_pids{id=%q}`, orphanID)); !ok || v < 1 {
		t.Errorf("sandtop_sandbox_pids of the containerd sandbox = %v (%v), want its tasks", v, ok)
	}
	if v, ok := p.scalar(fmt.Sprintf(`sandtop_sandbox_memory_bytes{id=%q}`, orphanID)); !ok || v <= 0 {
		t.Errorf("sandtop_sandbox_memory_bytes of the containerd sandbox = %v (%v)", v, ok)
	}
	if v, ok := p.scalar(fmt.Sprintf(`sandtop_sandbox_part_memory_bytes{id=%q,part="overhead"}`, orphanID)); !ok || v <= 0 {
		t.Errorf("the containerd sandbox's overhead memory (its shim) = %v (%v)", v, ok)
	}
	if v, ok := p.scalar(`sum(sandtop_sandboxes_without_memory_limit{runtime="containerd"})`); !ok || v < 1 {
		t.Errorf("sandtop_sandboxes_without_memory_limit for containerd = %v (%v), want the fleet's sandbox counted", v, ok)
	}
	if res := p.query(`sandtop_runtime_memory_bytes{runtime="containerd",part="workload"}`); len(res) == 0 {
		t.Errorf("no sandtop_runtime_memory_bytes for containerd's workload")
	}
	late := man.Sandbox("late").ID
	if _, ok := p.scalar(fmt.Sprintf(`sandtop_sandbox_badge{id=%q,badge="orphan"}`, late)); ok {
		t.Fatalf("sandbox late is an orphan before its supervisor was killed")
	}

	// late must have run for longer than the alert's time before it is
	// orphaned: an alert counted from the start would fire at once.
	if age := time.Since(fleetStarted); age < 20*time.Second {
		time.Sleep(20*time.Second - age)
	}
	// The alert is per runtime and host: another vm0 orphan on this host
	// (other work on a shared machine) would fire it whatever late does.
	others, _ := p.scalar(`sandtop_sandboxes_badged{runtime="vm0",badge="orphan"}`)
	killed := time.Now()
	if err := f.KillSupervisor(late); err != nil {
		t.Fatal(err)
	}
	agree("supervisor killed", func(c fleetCounts) error {
		if c.orphan < start.orphan+1 {
			return fmt.Errorf("orphan count %v, want at least %v", c.orphan, start.orphan+1)
		}
		return nil
	})
	if v, ok := p.scalar(fmt.Sprintf(`sandtop_sandbox_badge{id=%q,badge="orphan"}`, late)); !ok || v != 1 {
		t.Errorf("Prometheus shows no orphan badge for sandbox late after its supervisor was killed")
	}
	vm0 := p.query(`sandtop_sandboxes_badged{job="sandtop",badge="orphan",runtime="vm0"}`)
	t.Logf("vm0 orphans in Prometheus: %v", vm0)

	if v, ok := p.scalar(`up{job="sandtop"}`); !ok || v != 1 {
		t.Errorf("up{job=sandtop} = %v (%v)", v, ok)
	}
	// Every query the README shows runs, and the first one answers its
	// question: this host leaks a vm0 orphan.
	questions, queries := readmePromQL(t)
	for i, q := range queries {
		res := p.query(q)
		t.Logf("README query %q (%s): %v", q, questions[i], res)
		if i == 0 && len(res) == 0 {
			t.Errorf("%q: no host leaks vm0 orphans, but sandbox late is one", q)
		}
	}
	// The alert rules run in the same Prometheus, at a minute per second
	// (fastAlerts): sandbox late ran for more than "15 minutes" before
	// its supervisor died, and its orphan alert still waits 15 from the
	// death.
	if others > 0 {
		t.Logf("%v other vm0 orphans on this host: the alert's timing is not checked", others)
		return
	}
	fired := p.waitAlert(t, "SandtopSandboxOrphaned", "vm0", true, killed.Add(40*time.Second))
	t.Logf("SandtopSandboxOrphaned for vm0 fired %.1f s after the supervisor was killed (late started %.1f s before)",
		fired.Sub(killed).Seconds(), killed.Sub(fleetStarted).Seconds())
	if fired.Sub(killed) < 15*time.Second {
		t.Errorf("the orphan alert fired %s after the orphaning, before its 15 (scaled) minutes", fired.Sub(killed))
	}
	since, _ := p.scalar(`sandtop_badged_since_timestamp_seconds{runtime="vm0",badge="orphan"}`)
	earliest, _ := p.scalar(`sandtop_badged_since_earliest_timestamp_seconds{runtime="vm0",badge="orphan"}`)
	k := float64(killed.UnixMilli()) / 1000
	t.Logf("vm0 orphan window: %.1f s to %.1f s after the kill", earliest-k, since-k)
	// The scan that first saw it may have begun just before the kill.
	if since < k-1 || earliest > since || earliest < k-3 {
		t.Errorf("vm0 orphan window [%.1f, %.1f] s around the kill, want it to start within a scan (2 s) before the kill and end after it", earliest-k, since-k)
	}

	// serve restarts: it knows nothing of before, so the window reopens at
	// its first scan and reaches back to late's start, and the alert waits
	// its full time again rather than claim what serve did not see.
	s.stop(t)
	s = startServe(t, nil, serveArgs...)
	waitHealthy(t, s)
	restarted := time.Now()
	p.waitAlert(t, "SandtopSandboxOrphaned", "vm0", false, restarted.Add(15*time.Second))
	refired := p.waitAlert(t, "SandtopSandboxOrphaned", "vm0", true, restarted.Add(40*time.Second))
	t.Logf("after the restart, SandtopSandboxOrphaned for vm0 fired again %.1f s after serve came back", refired.Sub(restarted).Seconds())
	if refired.Sub(restarted) < 15*time.Second-2*time.Second {
		t.Errorf("after a restart the orphan alert fired %s after serve's first scan, before its 15 (scaled) minutes", refired.Sub(restarted))
	}
	if e, ok := p.scalar(`sandtop_badged_since_earliest_timestamp_seconds{runtime="vm0",badge="orphan"}`); !ok || e > float64(killed.Add(-15*time.Second).Unix()) {
		t.Errorf("after a restart, the vm0 orphan's earliest is %v (%v), want late's start, long before the kill", e, ok)
	}
}

// runReadmeServe runs a README `sandtop serve` line: on a free loopback
// port instead of the one it names, until it answers a scrape.
func runReadmeServe(t *testing.T, args []string) {
	t.Helper()
	for i := 0; i < len(args); i++ {
		if args[i] == "--listen" && i+1 < len(args) {
			args = slices.Delete(args, i, i+2)
			i--
		}
	}
	s := startServe(t, nil, args...)
	waitHealthy(t, s)
	if code, _, body := httpGet(t, "GET", s.url+"/metrics"); code != 200 || !strings.Contains(body, "sandtop_sandboxes{") {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
}

// readmePromQL returns the queries of README.md's promql block, each with
// the question (the comment) it answers.
func readmePromQL(t *testing.T) (questions, queries []string) {
	t.Helper()
	b := readDoc(t, "serve.md")
	in, question := false, ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "```promql"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && strings.HasPrefix(line, "# "):
			question = strings.TrimPrefix(line, "# ")
		case in && strings.TrimSpace(line) != "":
			questions, queries = append(questions, question), append(queries, strings.TrimSpace(line))
		}
	}
	if len(queries) < 5 {
		t.Fatalf("README.md has %d PromQL queries", len(queries))
	}
	return questions, queries
}
