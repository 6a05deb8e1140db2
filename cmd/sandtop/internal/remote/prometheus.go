package remote

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
)

// FleetView is what `sandtop list --prometheus` answers: the sandboxes of
// every host Prometheus scrapes, from the series `sandtop serve` exports.
// Hosts that export per-sandbox series (serve --per-sandbox) are listed
// sandbox by sandbox; the others by their counts per runtime and badge.
type FleetView struct {
	Source string    `json:"source"`
	Time   time.Time `json:"time"`
	Note   string    `json:"note"`
	// Sandboxes are those of the hosts with per-sandbox series.
	Sandboxes []FleetSandbox `json:"sandboxes"`
	// Counts are those of the hosts without, one per host and runtime.
	Counts []FleetCount `json:"counts"`
	// Omitted counts, per host, the sandboxes its --per-sandbox-limit
	// left out of the per-sandbox series.
	Omitted map[string]int `json:"omitted,omitempty"`
}

type FleetSandbox struct {
	Instance  string        `json:"instance"`
	ID        string        `json:"id"`
	Runtime   string        `json:"runtime"`
	Namespace string        `json:"namespace"`
	Badges    []model.Badge `json:"badges"`
	// BadgeSince is when serve first saw each badge.
	BadgeSince map[model.Badge]time.Time `json:"badge_since,omitempty"`
	RSSBytes   uint64                    `json:"rss_bytes"`
}

type FleetCount struct {
	Instance  string              `json:"instance"`
	Runtime   string              `json:"runtime"`
	Sandboxes int                 `json:"sandboxes"`
	Badged    map[model.Badge]int `json:"badged"`
}

// Series is one series of an instant query's answer.
type Series struct {
	Labels map[string]string
	Value  float64
}

// Query runs an instant query at t on the Prometheus at base.
func Query(ctx context.Context, base *url.URL, expr string, t time.Time) ([]Series, error) {
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
	out := make([]Series, 0, len(r.Data.Result))
	for _, s := range r.Data.Result {
		str, _ := s.Value[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("--prometheus: query %s: value %q", expr, model.Printable(str))
		}
		out = append(out, Series{Labels: s.Metric, Value: v})
	}
	return out, nil
}

// FromPrometheus asks Prometheus for the fleet, keeping what the filter
// passes. A count row passes when its runtime and the badges it counts
// do: terms about IDs or processes need per-sandbox series.
func FromPrometheus(ctx context.Context, base *url.URL, q query.Query, now time.Time) (*FleetView, error) {
	get := func(expr string) ([]Series, error) { return Query(ctx, base, expr, now) }
	fv := &FleetView{Source: base.String(), Time: now, Note: ReadOnlyNote, Sandboxes: []FleetSandbox{}, Counts: []FleetCount{}}
	key := func(l map[string]string) string {
		return l["instance"] + "\x00" + l["runtime"] + "\x00" + l["namespace"] + "\x00" + l["id"]
	}
	info, err := get(`sandtop_sandbox_info`)
	if err != nil {
		return nil, err
	}
	byKey := map[string]*FleetSandbox{}
	perSandbox := map[string]bool{}
	for _, s := range info {
		l := s.Labels
		byKey[key(l)] = &FleetSandbox{Instance: l["instance"], ID: l["id"], Runtime: l["runtime"], Namespace: l["namespace"]}
		perSandbox[l["instance"]] = true
	}
	for expr, apply := range map[string]func(*FleetSandbox, Series){
		`sandtop_sandbox_badge == 1`: func(sb *FleetSandbox, s Series) {
			sb.Badges = append(sb.Badges, model.Badge(s.Labels["badge"]))
		},
		`sandtop_sandbox_badge_since_timestamp_seconds`: func(sb *FleetSandbox, s Series) {
			if sb.BadgeSince == nil {
				sb.BadgeSince = map[model.Badge]time.Time{}
			}
			sb.BadgeSince[model.Badge(s.Labels["badge"])] = time.UnixMilli(int64(s.Value * 1000))
		},
		`sandtop_sandbox_rss_bytes`: func(sb *FleetSandbox, s Series) { sb.RSSBytes = uint64(s.Value) },
	} {
		series, err := get(expr)
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			if sb := byKey[key(s.Labels)]; sb != nil {
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
	slices.SortFunc(fv.Sandboxes, func(a, b FleetSandbox) int {
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
		fv.Omitted[s.Labels["instance"]] = int(s.Value)
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
	counts := map[string]*FleetCount{}
	for _, s := range totals {
		if !perSandbox[s.Labels["instance"]] {
			counts[key(s.Labels)] = &FleetCount{Instance: s.Labels["instance"], Runtime: s.Labels["runtime"],
				Sandboxes: int(s.Value), Badged: map[model.Badge]int{}}
		}
	}
	for _, s := range badged {
		if c := counts[key(s.Labels)]; c != nil {
			c.Badged[model.Badge(s.Labels["badge"])] = int(s.Value)
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
	slices.SortFunc(fv.Counts, func(a, b FleetCount) int {
		return cmp.Or(cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Runtime, b.Runtime))
	})
	return fv, nil
}
