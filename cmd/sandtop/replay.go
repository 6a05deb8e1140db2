package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/recording"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/ui"
)

func newReplayCmd(g *globals) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "The live screen on a recording: move through an incident after the fact",
		Long: `Open the live screen on a recording made by ` + "`sandtop record`" + ` (or the live
screen's --record): the same table, filter, sort, detail pane and tree, on the
past. It is read-only by construction: no teardown engine exists in it.

The time bar under the header shows the recorded time, the position in the
recording and the play state. t and T step to the next and the previous
frame, ] and [ a minute forward and back, j jumps to a time (03:12 or 03:12:30
local, 2026-11-23 03:12, RFC 3339, +90s after the start, -5m before the end),
space plays and pauses, + and - pick the speed (1x, 10x, 60x). The tree view
is on F5 and down on the arrow key, since t and j move in time here.

Sandboxes are grouped again from the recorded processes with the rules that
were in effect when recording; --rules FILE (or --no-presets) shows the past
through other rules.`,
		Example: `  sandtop replay incident.rec
  sandtop replay incident.rec --rules new-rules.toml --all`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, out, err := terminal(cmd)
			if err != nil {
				return err
			}
			r, rules, err := openRecording(cmd, g, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer r.Close()
			err = runScreen(cmd, in, out, ui.Options{
				Replay: newReplaySource(r, rules), ReadOnly: true, ShowHost: all,
			})
			if d := r.Damage(); d != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "sandtop: %s: read up to its last good frame: %v\n", args[0], d)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also show the processes in no sandbox, as one host group (key a)")
	return cmd
}

// replaySource is a recording as the screen replays it: each frame read
// and grouped on demand, with one Builder, so that stepping forward costs
// what a live refresh does.
type replaySource struct {
	r     *recording.Reader
	rules model.Rules
	mu    sync.Mutex
	b     *model.Builder
	// w judges each view from what the recording kept of the cgroups,
	// wait channels and kernel log; last is the frame it judged last:
	// a jump starts it over, since a stuck process's time in D and an
	// OOM counter's growth are counted over frames in order.
	w    model.Watch
	last int
}

func newReplaySource(r *recording.Reader, rules model.Rules) *replaySource {
	return &replaySource{r: r, rules: rules, b: model.NewBuilder(rules), last: -2}
}

func (s *replaySource) Len() int { return s.r.Len() }

func (s *replaySource) Time(i int) time.Time {
	fs := s.r.Frames()
	if len(fs) == 0 {
		return time.Time{}
	}
	return fs[min(max(i, 0), len(fs)-1)].Time
}

func (s *replaySource) View(i int, prev *model.View) (*model.View, error) {
	snap, err := s.r.Snapshot(i)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i != s.last+1 {
		s.w = model.Watch{}
	}
	s.last = i
	return s.w.Apply(s.b.Build(snap, prev)), nil
}

func (s *replaySource) Find(at string) (int, error) {
	first, last, _ := s.r.Range()
	t, err := recording.ParseTime(at, first, last, time.Local)
	if err != nil {
		return 0, err
	}
	return s.r.At(t)
}
