package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/remote"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/model/query"
	"github.com/sandtop/sandtop/ui/format"
	"github.com/sandtop/sandtop/ui/theme"
)

// The list command's views of other hosts: what internal/remote read,
// printed as `sandtop list` prints this host.

// parseFilter reads the filter terms given as arguments (the live
// screen's filter language).
func parseFilter(args []string) (query.Query, error) {
	q, err := query.Parse(strings.Join(args, " "))
	if err != nil {
		return q, usageErr(fmt.Errorf("filter: %w", err))
	}
	return q, nil
}

// writeFromHost prints a host's document as `sandtop list` prints this
// host: every cell escaped, for the other host's processes chose them.
func writeFromHost(w io.Writer, st *theme.Theme, d model.Document, source string, width int) {
	var rows [][]string
	for _, sb := range d.Sandboxes {
		var cpu float64
		var rss uint64
		var start time.Time
		for _, p := range sb.Processes {
			cpu += p.CPUSeconds
			rss += p.RSSBytes
			if p.PID == sb.RootPID {
				start = p.StartTime
			}
		}
		root, age := "-", "-"
		if sb.RootPID != 0 {
			root = fmt.Sprint(sb.RootPID)
		}
		if !start.IsZero() {
			age = format.Age(d.Time.Sub(start))
		}
		rows = append(rows, []string{sb.ID, sb.Runtime, fmt.Sprint(len(sb.Processes)), root,
			format.CPUTime(cpu), format.Bytes(rss), age, badgeList(sb.Badges)})
	}
	writeRemoteTable(w, st, []string{"ID", "RUNTIME", "PROCS", "ROOT PID", "CPU", "RSS", "AGE", "BADGES"}, rows,
		func(c int) bool { return c >= 2 && c <= 6 }, width)
	fmt.Fprintf(w, "%d sandboxes on %s, scanned %s (from %s)\n%s\n", len(d.Sandboxes), model.Printable(d.Host),
		d.Time.Format(time.RFC3339), model.Printable(source), remote.ReadOnlyNote)
}

func badgeList(bs []model.Badge) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = string(b)
	}
	return strings.Join(s, ",")
}

// writeRemoteTable prints rows under headers, every cell escaped.
func writeRemoteTable(w io.Writer, st *theme.Theme, headers []string, rows [][]string, numeric func(int) bool, width int) {
	for _, row := range rows {
		for c, cell := range row {
			row[c] = model.Printable(cell)
		}
	}
	lines, ok := []string(nil), false
	if st.Plain {
		lines, ok = plainTable(headers, rows, numeric)
	}
	if !ok {
		lines = tableLines(st.Renderer(), headers, rows, numeric)
	}
	writeLines(w, lines, width)
}

// writeFleet prints the fleet: one row per sandbox with its host, then
// the counts of the hosts without per-sandbox series.
func writeFleet(w io.Writer, st *theme.Theme, fv *remote.FleetView, width int) {
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
