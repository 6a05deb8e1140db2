package assets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc/proctest"
)

// lookTool finds a tool the tests drive; `make test-deps` installs them
// (promtool comes with Debian's prometheus, systemd-analyze with systemd).
func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		proctest.SkipMissing(t, "%s not installed (make test-deps installs it)", name)
	}
	return p
}

func TestAlertRulesCheck(t *testing.T) {
	promtool := lookTool(t, "promtool")
	dir := t.TempDir()
	rules := filepath.Join(dir, "alerts.yml")
	if err := os.WriteFile(rules, Alerts(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("SUCCESS: %d rules found", len(alertNames(t)))) {
		t.Errorf("promtool check rules: %s", out)
	}
}

// TestAlertRulesUnit runs promtool's unit tests (testdata/alerts_test.yml:
// input series that trip each alert, and some that must not) on the
// embedded rules.
func TestAlertRulesUnit(t *testing.T) {
	promtool := lookTool(t, "promtool")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alerts.yml"), Alerts(), 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("testdata/alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", filepath.Join(dir, "alerts_test.yml")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	// Every alert is exercised: each name appears in a test with alerts
	// expected.
	for _, name := range alertNames(t) {
		if !strings.Contains(string(tests), "alertname: "+name+"\n        exp_alerts:\n          - exp_labels") {
			t.Errorf("alert %s has no test in which it fires", name)
		}
	}
}

func alertNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, l := range strings.Split(string(Alerts()), "\n") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(l), "- alert: "); ok {
			names = append(names, n)
		}
	}
	if len(names) < 9 {
		t.Fatalf("found %d alerts in alerts.yml", len(names))
	}
	return names
}

// Every summary tells on-call what to run.
func TestAlertSummariesSayWhatToRun(t *testing.T) {
	parts := strings.Split(string(Alerts()), "- alert: ")[1:]
	for _, p := range parts {
		name, _, _ := strings.Cut(p, "\n")
		_, summary, ok := strings.Cut(p, "summary:")
		summary, _, _ = strings.Cut(summary, "description:")
		if !ok || !strings.Contains(summary, "`sandtop ") && !strings.Contains(summary, "`systemctl ") {
			t.Errorf("%s: the summary names no command to run:\n%s", name, summary)
		}
	}
}

func TestUnits(t *testing.T) {
	names := Units()
	if !slices.Contains(names, "serve") {
		t.Fatalf("Units() = %v, want serve among them", names)
	}
	if _, err := Unit("nope"); err == nil || !strings.Contains(err.Error(), "serve") {
		t.Errorf("Unit(nope): %v, want an error listing the units", err)
	}
	analyze := lookTool(t, "systemd-analyze")
	for _, name := range names {
		unit, err := Unit(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(unit, []byte("ExecStart="+DefaultBinary+" "+name+" ")) &&
			!bytes.Contains(unit, []byte("ExecStart="+DefaultBinary+" "+name+"\n")) {
			t.Errorf("%s: ExecStart does not run `sandtop %s`", name, name)
		}
		// systemd-analyze checks the unit's syntax and that ExecStart names
		// an executable: point it at one that exists.
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		unit, err = UnitFor(name, self)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), UnitFile(name))
		if err := os.WriteFile(path, unit, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
		}
	}
}

// The dashboard is a Grafana JSON model of the current schema: its three
// variables, panels with unique ids and a place on the grid, and every
// query on the chosen data source and hosts. (Each query is run against a
// real Prometheus by cmd/sandtop's TestFleetTwoHosts.)
func TestGrafanaDashboard(t *testing.T) {
	var d struct {
		UID           string `json:"uid"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []struct{ Name, Type string }
		}
		Panels []struct {
			ID         int
			Type       string
			Title      string
			GridPos    struct{ X, Y, W, H int } `json:"gridPos"`
			Datasource *struct{ Type, UID string }
			Targets    []struct {
				RefID      string `json:"refId"`
				Expr       string
				Datasource struct{ UID string }
			}
		}
	}
	if err := json.Unmarshal(Grafana(), &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.SchemaVersion < 39 {
		t.Errorf("uid %q, schemaVersion %d", d.UID, d.SchemaVersion)
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name+":"+v.Type)
	}
	if !slices.Equal(vars, []string{"datasource:datasource", "instance:query", "runtime:query"}) {
		t.Errorf("variables %v", vars)
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] || p.GridPos.W == 0 || p.GridPos.H == 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: id %d repeated, or gridPos %+v", p.Title, p.ID, p.GridPos)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d queries", p.Title, p.Datasource, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if tg.RefID == "" || tg.Datasource.UID != "${datasource}" || !strings.Contains(tg.Expr, `instance=~"$instance"`) {
				t.Errorf("panel %q: query %+v does not follow the data source and host variables", p.Title, tg)
			}
		}
	}
}
