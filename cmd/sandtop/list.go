package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/gcpace"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/recording"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/remote"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/ui/format"
	"github.com/sandtop/sandtop/ui/theme"
)

type listOpts struct {
	json, tree, all, wide bool
	from, at              string
	// prometheus is the URL of a Prometheus that scrapes sandtop serve.
	prometheus string
	// width cuts each line to the terminal's width (0: no limit, as when
	// piped or with --wide).
	width int
}

func newListCmd(g *globals) *cobra.Command {
	o := &listOpts{}
	cmd := &cobra.Command{
		Use:   "list [--prometheus URL | --from URL] [FILTER TERMS]",
		Short: "List the sandboxes on this host, another host, or the fleet",
		Long: `List every sandbox on this host, one row per sandbox: its ID (shortest unique
prefix, at least 12 characters), runtime, process count, root PID, CPU time,
resident memory, age and badges (orphan, zombie, paused).

--from URL lists another host's sandboxes from its ` + "`sandtop serve`" + ` (its
/api/v1/sandboxes), to look before logging in. --prometheus URL lists the
fleet from the series ` + "`sandtop serve`" + ` exports, each sandbox with its host
(instance): sandbox by sandbox from hosts whose serve runs --per-sandbox,
counts by runtime and badge from the others. Both take filter terms (the
live screen's: badge:orphan, runtime:vm0, id:PREFIX, words), and both are
read-only: no signal crosses the network, a kill is run on the host.`,
		Example: `  sandtop list
  sandtop list --tree           # lines cut to the terminal; --wide for whole ones
  sandtop list --json | jq '.sandboxes[] | select(.badges | index("orphan")) | .id'
  sandtop list --from incident.rec --at 03:12 --json   # as of 03:12, from a recording
  sandtop list --from http://worker-1:9717             # worker-1's sandboxes, read-only
  sandtop list --prometheus http://prometheus:9090 badge:orphan   # which hosts have orphans, and which`,
		Args: func(cmd *cobra.Command, args []string) error {
			// Filter terms select from another host's answer; this host's
			// list takes none (an unknown word is an unknown command).
			if o.prometheus == "" && !remote.IsURL(o.from) {
				return noArgs(cmd, args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.prometheus != "" || remote.IsURL(o.from) {
				return o.runRemote(cmd, args)
			}
			heap := gcpace.OneShot()
			defer heap.Stop()
			v, err := o.view(cmd, g, heap)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if o.json {
				return v.EncodeDocument(model.JSONSafe(out), o.all)
			}
			if f, ok := out.(*os.File); ok && !o.wide && term.IsTerminal(f.Fd()) {
				if w, _, err := term.GetSize(f.Fd()); err == nil {
					o.width = w
				}
			}
			writeList(out, theme.New(lipgloss.NewRenderer(out)), v, o)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print one JSON document (schema in docs/json.md)")
	f.BoolVar(&o.tree, "tree", false, "show each sandbox's process tree")
	f.BoolVar(&o.all, "all", false, "also show the processes in no sandbox")
	f.BoolVar(&o.wide, "wide", false, "on a terminal, print whole lines instead of cutting them to its width")
	f.StringVar(&o.from, "from", "", "read a recording (made by sandtop record) instead of the host, or with an http:// URL another host's sandtop serve")
	f.StringVar(&o.at, "at", "", "with --from: the moment to list: "+recording.TimeForms)
	f.StringVar(&o.prometheus, "prometheus", "", "list the fleet from this Prometheus (its URL), which scrapes sandtop serve")
	return cmd
}

// runRemote lists another host (--from URL) or the fleet (--prometheus).
func (o *listOpts) runRemote(cmd *cobra.Command, args []string) error {
	switch {
	case o.prometheus != "" && o.from != "":
		return usageErr(errors.New("--prometheus and --from: give one"))
	case o.at != "":
		return usageErr(errors.New("--at reads a recording: not with --prometheus or --from URL"))
	case o.tree:
		return usageErr(errors.New("--tree: not with --prometheus or --from URL"))
	case o.all && o.prometheus != "":
		return usageErr(errors.New("--all: not with --prometheus (the exported series name no process)"))
	}
	q, err := parseFilter(args)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f, ok := out.(*os.File); ok && !o.wide && term.IsTerminal(f.Fd()) {
		if w, _, err := term.GetSize(f.Fd()); err == nil {
			o.width = w
		}
	}
	st := theme.New(lipgloss.NewRenderer(out))
	if o.prometheus != "" {
		base, err := remote.ParseBaseURL("--prometheus", o.prometheus)
		if err != nil {
			return usageErr(err)
		}
		fv, err := remote.FromPrometheus(cmd.Context(), base, q, time.Now())
		if err != nil {
			return err
		}
		if o.json {
			enc := json.NewEncoder(model.JSONSafe(out))
			enc.SetIndent("", "  ")
			return enc.Encode(fv)
		}
		writeFleet(out, st, fv, o.width)
		return nil
	}
	base, err := remote.ParseBaseURL("--from", o.from)
	if err != nil {
		return usageErr(err)
	}
	d, err := remote.FromHost(cmd.Context(), base, o.all, q)
	if err != nil {
		return err
	}
	if o.json {
		return d.Encode(model.JSONSafe(out))
	}
	writeFromHost(out, st, d, base.String(), o.width)
	return nil
}

// view scans the host, or reads the recording --from names as of --at;
// heap is the command's collector tuning (gcpace.OneShot).
func (o *listOpts) view(cmd *cobra.Command, g *globals, heap *gcpace.Tuner) (*model.View, error) {
	switch {
	case o.from == "" && o.at != "":
		return nil, usageErr(errors.New("--at needs --from: a recording to read"))
	case o.from == "":
		// The text table shows no exe, cwd or uid: the scan reads them
		// only where a rule needs them. The JSON document carries every
		// listed process's uid (status), still no exe or cwd.
		return g.view(o.json, heap)
	case o.at == "":
		return nil, usageErr(errors.New("--from needs --at: the moment to list"))
	}
	r, rules, err := openRecording(cmd, g, o.from, cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return recordedView(r, rules, o.at)
}

func writeList(w io.Writer, st *theme.Theme, v *model.View, o *listOpts) {
	r := st.Renderer()
	short := v.ShortNames(model.MinShortID)
	snap := v.Snapshot

	var rows [][]string
	// under holds, for each row of the table, the lines printed under it
	// in tree view: its leftovers and processes, laid out on their own
	// from the left margin, so that the command gets the width and not
	// the columns of the sandbox rows.
	var under [][]string
	procLine := func(state, pid, cpu, rss, age, cmd string) string {
		return fmt.Sprintf("  %7s %1s %8s %6s %8s  %s", pid, state, cpu, rss, age, cmd)
	}
	for _, sb := range v.Sandboxes {
		var ticks, rss uint64
		for _, m := range sb.Members {
			ticks += m.CPUTicks
			rss += m.RSS
		}
		rootPID := "-"
		if sb.Root != nil {
			rootPID = strconv.Itoa(sb.Root.PID)
		}
		rows = append(rows, []string{
			short[sb], sb.Runtime, strconv.Itoa(len(sb.Members)), rootPID,
			format.CPUTime(float64(ticks) / float64(max(snap.ClockTicks, 1))),
			format.Bytes(rss), format.Age(v.Age(sb)),
			st.Badges(sb.Badges),
		})
		var sub []string
		if o.tree {
			for _, l := range sb.Leftovers {
				what := string(l.Kind) + " " + l.Path
				if !l.Removable() {
					what += " (kept: " + l.Keep + ")"
				}
				sub = append(sub, procLine("", "", "", "", format.Age(l.Age(v.Time)), what))
			}
			for _, m := range sb.Members {
				flags := ""
				if m.Escaped {
					flags = " [" + string(model.MarkEscaped) + "]"
				}
				sub = append(sub, procLine(string(m.State), strconv.Itoa(m.PID),
					format.CPUTime(snap.CPUSeconds(m.Process)), format.Bytes(m.RSS),
					format.Age(v.Time.Sub(snap.StartTime(m.Process))),
					format.TreePrefix(m)+format.Command(m.Process)+flags))
			}
		}
		under = append(under, sub)
	}
	if o.all && len(v.Unattributed) > 0 {
		rows = append(rows, []string{"(host)", "-", strconv.Itoa(len(v.Unattributed)), "", "", "", "", "processes in no sandbox"})
		var sub []string
		if o.tree {
			for _, p := range v.Unattributed {
				sub = append(sub, procLine(string(p.State), strconv.Itoa(p.PID),
					format.CPUTime(snap.CPUSeconds(p)), format.Bytes(p.RSS),
					format.Age(v.Time.Sub(snap.StartTime(p))), format.Command(p)))
			}
		}
		under = append(under, sub)
	}

	// Every cell may hold what a process chose (its argv, an ID or path
	// captured from it): each is escaped before it reaches the terminal.
	for _, row := range rows {
		for c, cell := range row {
			row[c] = model.Printable(cell)
		}
	}
	headers := []string{"ID", "RUNTIME", "PROCS", "ROOT PID", "CPU", "RSS", "AGE", "BADGES"}
	numeric := func(col int) bool { return col >= 2 && col <= 6 }
	lines, ok := []string(nil), false
	if st.Plain {
		lines, ok = plainTable(headers, rows, numeric)
	}
	if !ok {
		lines = tableLines(r, headers, rows, numeric)
	}
	if o.tree {
		lines = interleave(lines, under, st, procLine("S", "PID", "CPU", "RSS", "AGE", "COMMAND"))
	}
	writeLines(w, lines, o.width)
	writeListFooter(w, v)
}

// interleave puts under each row's line of the table (a header line
// first) the lines of its processes, escaped, faint as the screen draws
// them; head names their columns, under the table's header.
func interleave(table []string, under [][]string, st *theme.Theme, head string) []string {
	if len(table) != len(under)+1 {
		return table // a table that wrapped a row: nothing to hang the lines on
	}
	faint := st.Renderer().NewStyle().Faint(true)
	out := []string{table[0], faint.Render(head)}
	for i, sub := range under {
		out = append(out, table[i+1])
		for _, l := range sub {
			out = append(out, faint.Render(model.Printable(l)))
		}
	}
	return out
}

// tableLines renders the list's table with lipgloss: its styles, and
// what plainTable does not handle.
func tableLines(r *lipgloss.Renderer, headers []string, rows [][]string, numeric func(int) bool) []string {
	header := r.NewStyle().Bold(true).Padding(0, 1)
	cell := r.NewStyle().Padding(0, 1)
	num := cell.Align(lipgloss.Right)
	t := table.New().
		BorderTop(false).BorderBottom(false).BorderLeft(false).BorderRight(false).
		BorderColumn(false).BorderHeader(false).
		Headers(headers...).
		Rows(rows...).
		StyleFunc(func(row, col int) lipgloss.Style {
			switch {
			case row == table.HeaderRow:
				return header
			case numeric(col):
				return num
			}
			return cell
		})
	return strings.Split(t.Render(), "\n")
}

// writeLines prints the table's lines, cut to width when it is not 0.
func writeLines(w io.Writer, lines []string, width int) {
	bw := bufio.NewWriterSize(w, 32<<10)
	for _, line := range lines {
		// The table pads every cell to its column; the last column's
		// padding would pad every line to the longest argv.
		line = strings.TrimRight(line, " ")
		if width > 0 {
			line = ansi.Truncate(line, width, "…")
		}
		bw.WriteString(line)
		bw.WriteByte('\n')
	}
	bw.Flush()
}

// plainTable lays out what writeList's table shows without colour, the
// same text lipgloss's table renders (every cell padded by a space on each
// side to its column's width, numeric columns aligned right, their headers
// left) at a fraction of its cost: at 10,000 processes the table took
// 5% of `sandtop list`. It handles only cells of printable ASCII, whose
// width is their length; ok is false for anything else (a wide or
// control character in an argv), which the table renders.
func plainTable(headers []string, rows [][]string, right func(col int) bool) (lines []string, ok bool) {
	widths := make([]int, len(headers))
	measure := func(row []string) bool {
		for c, cell := range row {
			for i := 0; i < len(cell); i++ {
				if cell[i] < ' ' || cell[i] > '~' {
					return false
				}
			}
			widths[c] = max(widths[c], len(cell))
		}
		return true
	}
	if !measure(headers) {
		return nil, false
	}
	for _, row := range rows {
		if len(row) != len(headers) || !measure(row) {
			return nil, false
		}
	}
	spaces := strings.Repeat(" ", slices.Max(widths))
	var b strings.Builder
	line := func(row []string, alignRight bool) string {
		b.Reset()
		for c, cell := range row {
			pad := spaces[:widths[c]-len(cell)]
			b.WriteByte(' ')
			if alignRight && right(c) {
				b.WriteString(pad)
				b.WriteString(cell)
			} else {
				b.WriteString(cell)
				b.WriteString(pad)
			}
			b.WriteByte(' ')
		}
		return b.String()
	}
	lines = make([]string, 0, len(rows)+1)
	lines = append(lines, line(headers, false))
	for _, row := range rows {
		lines = append(lines, line(row, true))
	}
	return lines, true
}

// writeListFooter says what the table cannot: unreadable processes, or
// that there are no sandboxes.
func writeListFooter(w io.Writer, v *model.View) {
	if n := v.Snapshot.PartlyUnreadable; n > 0 {
		fmt.Fprintln(w, format.Unreadable(n))
	}
	if len(v.Sandboxes) == 0 {
		fmt.Fprintf(w, "no sandboxes on %s (%s in none; --all lists them)\n", model.Printable(v.Host), format.Count(len(v.Unattributed), "process", "processes"))
	}
}

func badges(bs []model.Badge) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = string(b)
	}
	return strings.Join(s, " ")
}
