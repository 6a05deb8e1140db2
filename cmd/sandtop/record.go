package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/gcpace"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/hostview"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/oneproc"
	"github.com/sandtop/sandtop/cmd/sandtop/internal/recording"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/ui"
	"github.com/sandtop/sandtop/ui/format"
)

// defaultKeyEvery is how often a recording starts over with a key frame:
// what a reader must decode at most to reach any moment, against what
// the key frames cost in size.
const defaultKeyEvery = 5 * time.Minute

type recordOpts struct {
	out      string
	dump     string
	interval time.Duration
	duration time.Duration
	keyEvery time.Duration
	maxSize  byteSize
}

func newRecordCmd(g *globals) *cobra.Command {
	o := &recordOpts{maxSize: 1 << 30}
	cmd := &cobra.Command{
		Use:   "record -o FILE",
		Short: "Record the host's processes to a file, to replay an incident later",
		Long: `Record what sandtop sees -- every process with the fields sandtop shows and
groups by, the cgroup states and the unix listeners -- once per --interval,
until Ctrl-C, --duration or --max-size. The file holds the rules in effect,
so that ` + "`sandtop replay FILE`" + ` and ` + "`sandtop list --from FILE --at TIME`" + ` group
the past as it was grouped then. A recording cut short by a crash is read
up to its last whole frame. The format is described in docs/recording.md.

A refresh costs what the live screen's does: the scanner re-reads only what
changes, and a frame holds only what changed since the one before, with a
key frame every --key-every. With --dump FILE, print a recording's header
and frame index instead.`,
		Example: `  sandtop record -o incident.rec
  sandtop record -o incident.rec --interval 5s --duration 24h --max-size 500MiB
  sandtop record --dump incident.rec`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case o.dump != "" && o.out != "":
				return usageErr(errors.New("-o and --dump: record, or dump a recording, not both"))
			case o.dump != "":
				return dumpRecording(cmd.OutOrStdout(), o.dump)
			case o.out == "":
				return usageErr(errors.New("-o FILE is required: where to record"))
			}
			return runRecord(cmd, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.out, "output", "o", "", "record to this file (it must not exist)")
	f.StringVar(&o.dump, "dump", "", "print this recording's header and frame index")
	durationFlag(f, &o.interval, "interval", time.Second, intervalRange, "time between snapshots")
	durationFlag(f, &o.duration, "duration", 0, spanRange, "stop after this long (0: until Ctrl-C)")
	durationFlag(f, &o.keyEvery, "key-every", defaultKeyEvery, spanRange, "time between key frames (whole snapshots)")
	f.Var(&o.maxSize, "max-size", "stop before the file grows past this (B, KiB, MiB, GiB; 0: no limit)")
	return cmd
}

// recordScanner is the scanner a recording reads with. It reads every
// field any rule can match on, not only those the rules in effect need, so
// that a replay with other rules sees what they would have seen.
func (g *globals) recordScanner() (*proc.Scanner, error) {
	return g.scanner(nil) // a full read (proc.Options.Need)
}

// newRecording creates the file and writes the header once the first
// snapshot is known. The file is created before anything is scanned, so
// that a bad path fails at once.
type newRecording struct {
	file     *os.File
	w        *recording.Writer
	rules    string
	procRoot string
	recorder string
	interval time.Duration
	keyEvery time.Duration
	maxSize  int64
}

func createRecording(path string, g *globals, rules model.Rules, recorder string, interval, keyEvery time.Duration, maxSize int64) (*newRecording, error) {
	var b strings.Builder
	if err := rules.WriteTOML(&b); err != nil {
		return nil, err
	}
	// Recordings hold every command line on the host: readable by the
	// recorder's user only, as /proc/PID/environ is.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, usageErr(fmt.Errorf("%s exists: record to a new file", path))
		}
		return nil, fmt.Errorf("record: %w", err)
	}
	return &newRecording{file: f, rules: b.String(), procRoot: g.procRoot, recorder: recorder,
		interval: interval, keyEvery: keyEvery, maxSize: maxSize}, nil
}

// write appends a snapshot, writing the header first.
func (r *newRecording) write(snap *proc.Snapshot) error {
	if r.w == nil {
		h := recording.NewHeader(snap, r.procRoot, version, r.recorder, r.rules, r.interval, r.keyEvery)
		w, err := recording.NewWriter(r.file, h, r.maxSize)
		if err != nil {
			return err
		}
		r.w = w
	}
	return r.w.Write(snap)
}

// close writes the end frame (when anything was recorded) and closes the
// file, and says what was recorded.
func (r *newRecording) close(stopped string) (frames int, size int64, err error) {
	if r.w != nil {
		err = r.w.Close(stopped)
		frames, size = r.w.Frames(), r.w.Size()
	}
	if serr := r.file.Sync(); err == nil && serr != nil {
		err = fmt.Errorf("record: %w", serr)
	}
	if cerr := r.file.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("record: %w", cerr)
	}
	return frames, size, err
}

func runRecord(cmd *cobra.Command, g *globals, o *recordOpts) error {
	rules, err := g.rules()
	if err != nil {
		return err
	}
	sc, err := g.recordScanner()
	if err != nil {
		return err
	}
	defer sc.Close()
	rec, err := createRecording(o.out, g, rules, "sandtop record", o.interval, o.keyEvery, int64(o.maxSize))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(orBackground(cmd.Context()), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	errOut := cmd.ErrOrStderr()
	until := "until Ctrl-C"
	if o.duration > 0 {
		until = "for " + o.duration.String()
	}
	fmt.Fprintf(errOut, "recording to %s every %s %s\n", o.out, o.interval, until)

	stopped, recErr := recordLoop(ctx, sc, rules, rec, o)
	frames, size, err := rec.close(stopped)
	if recErr == nil {
		recErr = err
	}
	fmt.Fprintf(errOut, "recorded %d snapshots (%s) to %s: %s\n", frames, format.Bytes(uint64(size)), o.out, stopped)
	return recErr
}

// orBackground is ctx, or the background context where cobra gave none.
func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// recordLoop scans every interval until the context ends, the duration is
// over or the file is full, and says which.
func recordLoop(ctx context.Context, sc *proc.Scanner, rules model.Rules, rec *newRecording, o *recordOpts) (string, error) {
	// What a replay needs for the resources block and the oom, stuck and
	// hollow badges is read for the sandboxes the rules find, as the live
	// screen reads it; the snapshot carries it into the frame.
	b := model.NewBuilder(rules)
	watch := hostview.NewWatcher(sc)
	defer watch.Close()
	var prev *model.View
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	var deadline <-chan time.Time
	if o.duration > 0 {
		t := time.NewTimer(o.duration)
		defer t.Stop()
		deadline = t.C
	}
	heap := gcpace.LongRunning()
	procs := oneproc.AfterFirstRefresh()
	defer procs.Stop()
	for {
		snap, err := sc.Scan()
		if err != nil {
			return "scan failed", fmt.Errorf("scan: %w", err)
		}
		prev = watch.Apply(b.Build(snap, prev))
		heap.Refreshed()
		procs.Refreshed()
		switch err := rec.write(snap); {
		case errors.Is(err, recording.ErrMaxSize) && rec.w.Frames() == 0:
			return "no snapshot fits --max-size", usageErr(fmt.Errorf("--max-size %s is smaller than one snapshot of this host", o.maxSize.String()))
		case errors.Is(err, recording.ErrMaxSize):
			return "reached --max-size " + o.maxSize.String(), nil
		case err != nil:
			return "write failed", err
		}
		select {
		case <-ctx.Done():
			return "interrupted", nil
		case <-deadline:
			return "recorded for --duration " + o.duration.String(), nil
		case <-tick.C:
		}
	}
}

// dumpRecording prints a recording's header and frame index, and where
// and why reading it stops when it is damaged.
func dumpRecording(out io.Writer, path string) error {
	r, err := recording.Open(path)
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	defer r.Close()
	// Decode every frame, so that damage inside a payload shows too.
	_ = r.Verify()
	h := r.Header
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, kv := range [][2]string{
		{"format", "sandtop recording, version " + strconv.Itoa(int(h.FormatVersion))},
		{"recorded by", h.Recorder + " " + h.Version},
		{"host", h.Host},
		{"boot id", h.BootID},
		{"boot time", h.BootTime.Local().Format(time.RFC3339)},
		{"clock ticks", fmt.Sprintf("%d/s", h.ClockTicks)},
		{"page size", strconv.FormatUint(h.PageSize, 10)},
		{"recorder pid", strconv.Itoa(h.SelfPID)},
		{"started", h.Started.Local().Format(time.RFC3339Nano)},
		{"interval", h.Interval.String()},
		{"key frames every", h.KeyEvery.String()},
		{"rules", ruleNames(h.Rules)},
	} {
		// A recording is a file anyone may hand over: its header is
		// escaped like anything a process controls.
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], model.Printable(kv[1]))
	}
	tw.Flush()
	fmt.Fprintln(out)
	frames := r.Frames()
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "FRAME\tKIND\tTIME\tOFFSET\tBYTES\tPROCS\tBORN\tEXITED\t")
	var keys int
	var total int64
	var prev *proc.Snapshot
	for i, f := range frames {
		kind := "delta"
		if f.Key {
			kind, keys = "key", keys+1
		}
		total += f.Size
		procs, born, exited := "?", "", ""
		if snap, err := r.Snapshot(i); err == nil {
			procs = strconv.Itoa(len(snap.Procs))
			if prev != nil {
				b, e := births(prev, snap)
				born, exited = strconv.Itoa(b), strconv.Itoa(e)
			}
			prev = snap
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t\n", i+1, kind, f.Time.Local().Format("2006-01-02 15:04:05.000"), f.Offset, f.Size, procs, born, exited)
	}
	tw.Flush()
	fmt.Fprintln(out)
	if first, last, ok := r.Range(); ok {
		secs := last.Sub(first).Seconds()
		rate := ""
		if secs > 0 {
			rate = fmt.Sprintf(", %s/s, %s/day", format.Bytes(uint64(float64(total)/secs)), format.Bytes(uint64(float64(total)/secs*86400)))
		}
		fmt.Fprintf(out, "%d snapshots (%d key frames) from %s to %s (%s), %s%s\n", len(frames), keys,
			first.Local().Format(time.RFC3339), last.Local().Format(time.RFC3339), last.Sub(first).Round(time.Millisecond), format.Bytes(uint64(total)), rate)
	}
	if e := r.End(); e != nil && r.Damage() == nil {
		fmt.Fprintf(out, "closed cleanly: %s\n", e.Stopped)
		return nil
	}
	fmt.Fprintf(out, "read up to its last good frame: %s\n", model.Printable(fmt.Sprint(r.Damage())))
	return nil
}

// byteSize is a size flag: 1073741824, 1GiB, 500MiB, 100MB, 64K.
type byteSize int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1},
}

func (b *byteSize) Set(s string) error {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range sizeUnits {
		if n := len(num) - len(u.suffix); n > 0 && strings.EqualFold(num[n:], u.suffix) {
			num, mult = strings.TrimSpace(num[:len(num)-len(u.suffix)]), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || v*float64(mult) > 1<<62 {
		return fmt.Errorf("%q: not a size like 1GiB, 500MiB or 1048576", s)
	}
	*b = byteSize(v * float64(mult))
	return nil
}

func (b *byteSize) String() string { return format.Bytes(uint64(*b)) }
func (b *byteSize) Type() string   { return "size" }

// ruleNames lists the names of a recording's rules, in order.
func ruleNames(text string) string {
	rs, err := model.ParseRules([]byte(text), "recorded rules")
	if err != nil {
		return "unreadable: " + err.Error()
	}
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name
	}
	return fmt.Sprintf("%d: %s", len(rs), strings.Join(names, ", "))
}

// recordingSource is the live screen's source when it records: each view
// the screen shows, its snapshot goes to the recording too. The scan is
// the screen's own, so recording costs writing a frame, not a scan.
type recordingSource struct {
	ui.Source
	rec  *newRecording
	path string

	mu   sync.Mutex
	err  error // why recording stopped early
	done string
}

func (s *recordingSource) Scan() (*model.View, error) {
	v, err := s.Source.Scan()
	if err != nil {
		return v, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil && s.done == "" {
		switch err := s.rec.write(v.Snapshot); {
		case errors.Is(err, recording.ErrMaxSize):
			s.done = "reached --max-size"
		case err != nil:
			s.err = err
		}
	}
	return v, nil
}

// Recording tells the screen's header what is being recorded: the file,
// its size so far, and why it stopped, if it did.
func (s *recordingSource) Recording() ui.RecordingState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ui.RecordingState{Path: s.path, Stopped: s.done}
	if s.rec.w != nil {
		st.Size = s.rec.w.Size()
	}
	if s.err != nil {
		st.Stopped = "failed: " + s.err.Error()
	}
	return st
}

// close ends the recording and says what it holds.
func (s *recordingSource) close(errOut io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	stopped := cmp.Or(s.done, "the live screen quit")
	if s.err != nil {
		stopped = "write failed"
	}
	frames, size, err := s.rec.close(stopped)
	fmt.Fprintf(errOut, "recorded %d snapshots (%s) to %s: %s\n", frames, format.Bytes(uint64(size)), s.path, stopped)
	if s.err != nil {
		return fmt.Errorf("recording stopped early: %w", s.err)
	}
	return err
}

// births counts the identities in cur that prev lacks, and the reverse.
func births(prev, cur *proc.Snapshot) (born, exited int) {
	for _, p := range cur.Procs {
		if q := prev.Proc(p.PID); q == nil || q.Start != p.Start {
			born++
		}
	}
	for _, p := range prev.Procs {
		if q := cur.Proc(p.PID); q == nil || q.Start != p.Start {
			exited++
		}
	}
	return born, exited
}
