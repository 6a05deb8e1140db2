package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
	"github.com/sandtop/sandtop/ui/format"
	"github.com/sandtop/sandtop/ui/theme"
)

// fleetView is what `sandtop list --prometheus` answers: the sandboxes of
// every host Prometheus scrapes, from the series `sandtop serve` exports.
// Hosts that export per-sandbox series (serve --per-sandbox) are listed
// sandbox by sandbox; the others by their counts per runtime and badge.
type fleetView struct {
	Source string    `json:"source"`
	Time   time.Time `json:"time"`
	Note   string    `json:"note"`
	// Sandboxes are those of the hosts with per-sandbox series.
	Sandboxes []fleetSandbox `json:"sandboxes"`
	// Counts are those of the hosts without, one per host and runtime.
	Counts []fleetCount `json:"counts"`
	// Omitted counts, per host, the sandboxes its --per-sandbox-limit
	// left out of the per-sandbox series.
	Omitted map[string]int `json:"omitted,omitempty"`
}

type fleetSandbox struct {
	Instance  string        `json:"instance"`
	ID        string        `json:"id"`
	Runtime   string        `json:"runtime"`
	Namespace string        `json:"namespace"`
	Badges    []model.Badge `json:"badges"`
	// BadgeSince is when serve first saw each badge.
	BadgeSince map[model.Badge]time.Time `json:"badge_since,omitempty"`
	RSSBytes   uint64                    `json:"rss_bytes"`
}

type fleetCount struct {
	Instance  string              `json:"instance"`
	Runtime   string              `json:"runtime"`
	Sandboxes int                 `json:"sandboxes"`
	Badged    map[model.Badge]int `json:"badged"`
}

// promSeries is one series of an instant query's answer.
type promSeries struct {
	labels map[string]string
	value  float64
}

// promQuery runs an instant query at t on the Prometheus at base.
func promQuery(ctx context.Context, base *url.URL, expr string, t time.Time) ([]promSeries, error) {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/query"
	u.RawQuery = url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)}}.Encode()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := getJSON(ctx, u.String(), &r); err != nil {
		return nil, fmt.Errorf("--prometheus: %w", err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("--prometheus: query %s: %s", expr, model.Printable(r.Error))
	}
	out := make([]promSeries, 0, len(r.Data.Result))
	for _, s := range r.Data.Result {
		str, _ := s.Value[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("--prometheus: query %s: value %q", expr, model.Printable(str))
		}
		out = append(out, promSeries{labels: s.Metric, value: v})
	}
	return out, nil
}

// fromPrometheus asks Prometheus for the fleet, keeping what the filter
// passes. A count row passes when its runtime and the badges it counts
// do: terms about IDs or processes need per-sandbox series.
func fromPrometheus(ctx context.Context, base *url.URL, q query.Query, now time.Time) (*fleetView, error) {
	get := func(expr string) ([]promSeries, error) { return promQuery(ctx, base, expr, now) }
	fv := &fleetView{Source: base.String(), Time: now, Note: readOnlyNote, Sandboxes: []fleetSandbox{}, Counts: []fleetCount{}}
	key := func(l map[string]string) string {
		return l["instance"] + "\x00" + l["runtime"] + "\x00" + l["namespace"] + "\x00" + l["id"]
	}
	info, err := get(`sandtop_sandbox_info`)
	if err != nil {
		return nil, err
	}
	byKey := map[string]*fleetSandbox{}
	perSandbox := map[string]bool{}
	for _, s := range info {
		l := s.labels
		byKey[key(l)] = &fleetSandbox{Instance: l["instance"], ID: l["id"], Runtime: l["runtime"], Namespace: l["namespace"]}
		perSandbox[l["instance"]] = true
	}
	for expr, apply := range map[string]func(*fleetSandbox, promSeries){
		`sandtop_sandbox_badge == 1`: func(sb *fleetSandbox, s promSeries) {
			sb.Badges = append(sb.Badges, model.Badge(s.labels["badge"]))
		},
		`sandtop_sandbox_badge_since_timestamp_seconds`: func(sb *fleetSandbox, s promSeries) {
			if sb.BadgeSince == nil {
				sb.BadgeSince = map[model.Badge]time.Time{}
			}
			sb.BadgeSince[model.Badge(s.labels["badge"])] = time.UnixMilli(int64(s.value * 1000))
		},
		`sandtop_sandbox_rss_bytes`: func(sb *fleetSandbox, s promSeries) { sb.RSSBytes = uint64(s.value) },
	} {
		series, err := get(expr)
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			if sb := byKey[key(s.labels)]; sb != nil {
				apply(sb, s)
			}
		}
	}
	for _, sb := range byKey {
		slices.SortFunc(sb.Badges, func(a, b model.Badge) int { return slices.Index(model.Badges, a) - slices.Index(model.Badges, b) })
		if q.Sandbox(&model.Sandbox{ID: sb.ID, Runtime: sb.Runtime, Namespace: sb.Namespace, Badges: sb.Badges}) {
			fv.Sandboxes = append(fv.Sandboxes, *sb)
		}
	}
	slices.SortFunc(fv.Sandboxes, func(a, b fleetSandbox) int {
		return cmp.Or(cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Runtime, b.Runtime),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.ID, b.ID))
	})
	omitted, err := get(`sandtop_per_sandbox_omitted > 0`)
	if err != nil {
		return nil, err
	}
	for _, s := range omitted {
		if fv.Omitted == nil {
			fv.Omitted = map[string]int{}
		}
		fv.Omitted[s.labels["instance"]] = int(s.value)
	}

	totals, err := get(`sandtop_sandboxes`)
	if err != nil {
		return nil, err
	}
	if len(totals) == 0 {
		return nil, fmt.Errorf("--prometheus %s: %w", base, errNoSeries)
	}
	badged, err := get(`sandtop_sandboxes_badged`)
	if err != nil {
		return nil, err
	}
	counts := map[string]*fleetCount{}
	for _, s := range totals {
		if !perSandbox[s.labels["instance"]] {
			counts[key(s.labels)] = &fleetCount{Instance: s.labels["instance"], Runtime: s.labels["runtime"],
				Sandboxes: int(s.value), Badged: map[model.Badge]int{}}
		}
	}
	for _, s := range badged {
		if c := counts[key(s.labels)]; c != nil {
			c.Badged[model.Badge(s.labels["badge"])] = int(s.value)
		}
	}
	for _, c := range counts {
		sb := &model.Sandbox{Runtime: c.Runtime}
		for _, b := range model.Badges {
			if c.Badged[b] > 0 {
				sb.Badges = append(sb.Badges, b)
			}
		}
		if c.Sandboxes > 0 && (q.Empty() || q.Sandbox(sb)) {
			fv.Counts = append(fv.Counts, *c)
		}
	}
	slices.SortFunc(fv.Counts, func(a, b fleetCount) int {
		return cmp.Or(cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Runtime, b.Runtime))
	})
	return fv, nil
}

// writeFleet prints the fleet: one row per sandbox with its host, then
// the counts of the hosts without per-sandbox series.
func writeFleet(w io.Writer, st *theme.Theme, fv *fleetView, width int) {
	hosts := map[string]bool{}
	if len(fv.Sandboxes) > 0 {
		var rows [][]string
		for _, sb := range fv.Sandboxes {
			hosts[sb.Instance] = true
			var badges []string
			for _, b := range sb.Badges {
				if since, ok := sb.BadgeSince[b]; ok {
					badges = append(badges, fmt.Sprintf("%s (%s)", b, format.Age(fv.Time.Sub(since))))
				} else {
					badges = append(badges, string(b))
				}
			}
			rows = append(rows, []string{sb.Instance, sb.ID, sb.Runtime, sb.Namespace, format.Bytes(sb.RSSBytes), strings.Join(badges, ",")})
		}
		writeRemoteTable(w, st, []string{"HOST", "ID", "RUNTIME", "NAMESPACE", "RSS", "BADGES (SINCE)"}, rows,
			func(c int) bool { return c == 4 }, width)
	}
	if len(fv.Counts) > 0 {
		if len(fv.Sandboxes) > 0 {
			fmt.Fprintln(w)
		}
		headers := []string{"HOST", "RUNTIME", "SANDBOXES"}
		for _, b := range model.Badges {
			headers = append(headers, strings.ToUpper(string(b)))
		}
		var rows [][]string
		for _, c := range fv.Counts {
			hosts[c.Instance] = true
			row := []string{c.Instance, c.Runtime, strconv.Itoa(c.Sandboxes)}
			for _, b := range model.Badges {
				row = append(row, strconv.Itoa(c.Badged[b]))
			}
			rows = append(rows, row)
		}
		writeRemoteTable(w, st, headers, rows, func(c int) bool { return c >= 2 }, width)
		fmt.Fprintln(w, "(counts: these hosts export no per-sandbox series; run their serve with --per-sandbox to list sandboxes)")
	}
	for host, n := range fv.Omitted {
		fmt.Fprintf(w, "%s: %d sandboxes not exported (--per-sandbox-limit)\n", model.Printable(host), n)
	}
	fmt.Fprintf(w, "%d sandboxes on %d hosts, from Prometheus at %s (%s)\n%s\n", len(fv.Sandboxes), len(hosts),
		model.Printable(fv.Source), fv.Time.Format(time.RFC3339), fv.Note)
}
