package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/assets"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/remote"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc/proctest"
)

// envServeHost makes TestServeChild a host of its own (hostSpec, JSON):
// the init of a pid namespace that runs a fleet and serves it.
const envServeHost = "SANDTOP_SERVE_HOST"

type hostSpec struct {
	Fleet fleet.Spec
	// Proc is where this namespace's procfs is mounted, for serve's
	// --proc-root; Manifest where the fleet's manifest is written.
	Proc, Manifest string
}

// serveAsHost mounts this pid namespace's procfs on /proc (in a private
// mount namespace: the fleet reads /proc by the pids it knows, this
// namespace's) and at spec.Proc, starts the fleet, and serves until
// SIGTERM, then closes the fleet. serve sees this namespace's processes
// only: a host.
func serveAsHost(t *testing.T, spec, args string) error {
	var h hostSpec
	if err := json.Unmarshal([]byte(spec), &h); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	for _, at := range []string{"/proc", h.Proc} {
		if err := unix.Mount("proc", at, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount procfs on %s: %w", at, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := fleet.Start(ctx, h.Fleet, fleet.Options{})
	if err != nil {
		return fmt.Errorf("start fleet: %w", err)
	}
	defer func() {
		if err := f.Close(); err != nil {
			t.Errorf("fleet close: %v", err)
		}
		fleet.ReapZombies()
	}()
	b, err := json.Marshal(f.Manifest())
	if err != nil {
		return err
	}
	if err := os.WriteFile(h.Manifest, b, 0o600); err != nil {
		return err
	}
	if code := run(append([]string{"serve"}, strings.Fields(args)...), os.Stdin, os.Stdout, os.Stderr); code != 0 {
		return fmt.Errorf("sandtop serve: exit %d", code)
	}
	return nil
}

// fakeHost is a host the test made: a pid namespace with a fleet and
// serve.
type fakeHost struct {
	*served
	man fleet.Manifest
	// addr is host:port, the instance label Prometheus gives it.
	addr string
}

func startHost(t *testing.T, sb []fleet.SandboxSpec, args ...string) *fakeHost {
	t.Helper()
	dir := t.TempDir()
	spec := hostSpec{Fleet: fleet.Spec{Sandboxes: sb}, Proc: filepath.Join(dir, "proc"), Manifest: filepath.Join(dir, "manifest.json")}
	if err := os.Mkdir(spec.Proc, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(spec)
	s := startServeWith(t, []string{envServeHost + "=" + string(b)},
		// The init of the namespace: when it dies, the kernel kills what
		// it left in there.
		&syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL},
		nil, append([]string{"--proc-root", spec.Proc, "--interval", "1s"}, args...)...)
	waitHealthy(t, s)
	h := &fakeHost{served: s, addr: strings.TrimPrefix(s.url, "http://")}
	mb, err := os.ReadFile(spec.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mb, &h.man); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *fakeHost) document(t *testing.T) model.Document {
	t.Helper()
	_, _, body := httpGet(t, "GET", h.url+"/api/v1/sandboxes")
	var d model.Document
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatalf("%s: %v", h.url, err)
	}
	return d
}

func ids(d model.Document) []string {
	var out []string
	for _, sb := range d.Sandboxes {
		out = append(out, sb.ID)
	}
	slices.Sort(out)
	return out
}

// TestFleetTwoHosts: two hosts (two fleets in two pid namespaces, each
// with its serve, one with --per-sandbox), one real Prometheus scraping
// both. `sandtop list --prometheus` answers which hosts have orphans and
// which sandboxes, each with its host, as the hosts themselves say;
// `sandtop list --from` reads one host; every panel of the Grafana
// dashboard returns data.
func TestFleetTwoHosts(t *testing.T) {
	proctest.RequireRoot(t)
	lookTool(t, "prometheus")
	a := startHost(t, []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0},
		{Name: "orphan", Runtime: fleet.Containerd, Orphan: true},
		{Name: "zombie", Runtime: fleet.Docker, Zombies: 2},
	}, "--per-sandbox")
	b := startHost(t, []fleet.SandboxSpec{
		{Name: "orphan", Runtime: fleet.VM0, Orphan: true},
		{Name: "paused", Runtime: fleet.Cube, Pause: fleet.PauseFreeze},
	})
	da, db := a.document(t), b.document(t)
	// Each host sees its own fleet and nothing of the other's. (Both may
	// see sandboxes known by their cgroups alone, whose processes live in
	// other pid namespaces: the cgroup tree is the machine's.)
	for _, c := range []struct {
		name        string
		d           model.Document
		own, others fleet.Manifest
	}{{"a", da, a.man, b.man}, {"b", db, b.man, a.man}} {
		for _, sb := range c.own.Sandboxes {
			if find(c.d, sb.ID) == nil {
				t.Fatalf("host %s does not list its sandbox %s: %v", c.name, sb.Name, ids(c.d))
			}
		}
		for _, sb := range c.others.Sandboxes {
			if find(c.d, sb.ID) != nil {
				t.Fatalf("host %s lists the other host's sandbox %s", c.name, sb.Name)
			}
		}
	}
	p := startPrometheus(t, assets.Alerts(), a.addr, b.addr)
	deadline := time.Now().Add(60 * time.Second)
	for {
		hosts := p.query(`count by (instance) (sandtop_sandboxes)`)
		per := p.query(`count by (instance) (sandtop_sandbox_info)`)
		// rate() needs two samples of the CPU counter.
		cpu := p.query(`rate(sandtop_sandbox_cpu_seconds_total[1m])`)
		if len(hosts) == 2 && len(per) == 1 && len(cpu) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus has not scraped both hosts: %v, per-sandbox %v", hosts, per)
		}
		time.Sleep(500 * time.Millisecond)
	}

	t.Run("list --prometheus", func(t *testing.T) {
		code, out, errOut := sandtop(t, "list", "--prometheus", p.url, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var fv remote.FleetView
		if err := json.Unmarshal([]byte(out), &fv); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		// Host a exports per-sandbox series: its fleet's sandboxes are
		// there with the badges its own document gives them, and nothing
		// of host b's fleet is.
		got := map[string]remote.FleetSandbox{}
		for _, sb := range fv.Sandboxes {
			if sb.Instance != a.addr {
				t.Errorf("sandbox %s of host %s: only host a exports per-sandbox series", sb.ID, sb.Instance)
				continue
			}
			got[sb.ID] = sb
		}
		for _, m := range a.man.Sandboxes {
			sb, ok := got[m.ID]
			want := find(da, m.ID)
			if !ok || !slices.Equal(sb.Badges, want.Badges) {
				t.Errorf("host a, sandbox %s: %+v from Prometheus, badges %v from the host", m.Name, sb, want.Badges)
			}
		}
		for _, m := range b.man.Sandboxes {
			if _, ok := got[m.ID]; ok {
				t.Errorf("host b's sandbox %s is listed under host a", m.Name)
			}
		}
		orphan := a.man.Sandbox("orphan").ID
		if got[orphan].BadgeSince[model.BadgeOrphan].IsZero() {
			t.Errorf("host a's orphan has no badge_since")
		}
		// Host b: counts by runtime, at least its fleet's (other sandboxes
		// known by their cgroups alone may add to them).
		counts := map[string]remote.FleetCount{}
		for _, c := range fv.Counts {
			if c.Instance != b.addr {
				t.Errorf("counts of host %s: host a exports per-sandbox series", c.Instance)
				continue
			}
			counts[c.Runtime] = c
		}
		for _, m := range b.man.Sandboxes {
			c := counts[find(db, m.ID).Runtime]
			for _, bd := range find(db, m.ID).Badges {
				if c.Badged[bd] < 1 {
					t.Errorf("host b's %s sandbox %s (%s) is not counted: %+v", c.Runtime, m.Name, bd, c)
				}
			}
			if c.Sandboxes < 1 {
				t.Errorf("host b's sandbox %s is not counted: %+v", m.Name, counts)
			}
		}
		if !strings.Contains(fv.Note, "no signal crosses the network") {
			t.Errorf("note %q", fv.Note)
		}

		// Which hosts have orphans, and which sandboxes?
		code, out, errOut = sandtop(t, "list", "--prometheus", p.url, "badge:orphan")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		t.Logf("sandtop list --prometheus URL badge:orphan:\n%s", out)
		for _, want := range []string{a.addr, orphan, b.addr, "no signal crosses the network"} {
			if !strings.Contains(out, want) {
				t.Errorf("list --prometheus badge:orphan lacks %q", want)
			}
		}
		for _, not := range []string{a.man.Sandbox("vm").ID, a.man.Sandbox("zombie").ID} {
			if strings.Contains(out, not) {
				t.Errorf("list --prometheus badge:orphan shows %q, which has no orphan", not)
			}
		}
		if line := regexp.MustCompile(`(?m)^.*` + regexp.QuoteMeta(b.addr) + `.*vm0.*$`).FindString(out); line == "" {
			t.Errorf("host b's vm0 orphan is not counted")
		}
	})

	t.Run("list --from", func(t *testing.T) {
		code, out, errOut := sandtop(t, "list", "--from", a.url, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var d model.Document
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		for _, m := range a.man.Sandboxes {
			if find(d, m.ID) == nil {
				t.Errorf("list --from a lacks host a's sandbox %s", m.Name)
			}
		}
		for _, m := range b.man.Sandboxes {
			if find(d, m.ID) != nil {
				t.Errorf("list --from a lists host b's sandbox %s", m.Name)
			}
		}
		code, out, errOut = sandtop(t, "list", "--from", a.url, "badge:orphan")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		t.Logf("sandtop list --from URL badge:orphan:\n%s", out)
		orphan := a.man.Sandbox("orphan").ID
		if !strings.Contains(out, orphan[:12]) || strings.Contains(out, a.man.Sandbox("vm").ID[:12]) ||
			!strings.Contains(out, "no signal crosses the network") {
			t.Errorf("list --from a badge:orphan: want the orphan only, and the read-only note")
		}
	})

	t.Run("grafana", func(t *testing.T) {
		var dash struct {
			Panels []struct {
				Title, Type string
				Targets     []struct{ Expr string }
			}
			Templating struct {
				List []struct {
					Name, Type, Definition string
				}
			}
		}
		if err := json.Unmarshal(assets.Grafana(), &dash); err != nil {
			t.Fatal(err)
		}
		// The variables' label_values(metric, label) is Grafana's, not
		// PromQL: it asks for the label's values of the metric's series.
		labelValues := regexp.MustCompile(`^label_values\((.*), (\w+)\)$`)
		for _, v := range dash.Templating.List {
			if v.Type != "query" {
				continue
			}
			m := labelValues.FindStringSubmatch(v.Definition)
			if m == nil {
				t.Errorf("variable %s: %q is not label_values(metric, label)", v.Name, v.Definition)
				continue
			}
			expr := fmt.Sprintf("group by (%s) (%s)", m[2], grafanaExpr(m[1]))
			if res := p.query(expr); len(res) == 0 {
				t.Errorf("variable %s: %s has no values", v.Name, expr)
			}
		}
		n := 0
		for _, pn := range dash.Panels {
			for _, tg := range pn.Targets {
				n++
				expr := grafanaExpr(tg.Expr)
				res := p.query(expr)
				t.Logf("panel %q: %s: %d series", pn.Title, expr, len(res))
				if len(res) == 0 {
					t.Errorf("panel %q: %s returns no data", pn.Title, expr)
				}
			}
		}
		if n < 9 {
			t.Errorf("%d panel queries", n)
		}
	})
}

// grafanaExpr is a dashboard query as Grafana sends it with every host
// and runtime selected.
func grafanaExpr(expr string) string {
	return strings.NewReplacer(`$instance`, `.*`, `$runtime`, `.*`, `$__rate_interval`, `1m`).Replace(expr)
}
