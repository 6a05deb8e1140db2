package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/recording"
	"github.com/sandtop/sandtop/model"
)

// openRecording opens a recording and picks the rules to group it with:
// the rules it was recorded with, unless --rules or --no-presets ask to
// see the past through other rules (loaded as the live commands load
// them). Damage is reported on errOut; the frames before it are read.
func openRecording(cmd *cobra.Command, g *globals, path string, errOut io.Writer) (*recording.Reader, model.Rules, error) {
	r, err := recording.Open(path)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	if d := r.Damage(); d != nil {
		fmt.Fprintf(errOut, "sandtop: %s: read up to its last good frame: %v\n", path, d)
	}
	if r.Len() == 0 {
		r.Close()
		return nil, nil, usageErr(fmt.Errorf("%s: no snapshot could be read", path))
	}
	var rules model.Rules
	if flagChanged(cmd, "rules") || flagChanged(cmd, "no-presets") {
		rules, err = g.rules()
	} else {
		rules, err = model.ParseRules([]byte(r.Header.Rules), path+" (recorded rules)")
		if err == nil && len(rules) == 0 {
			err = errors.New("the recording holds no rules: give --rules")
		}
		if err != nil {
			err = usageErr(err)
		}
	}
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, rules, nil
}

func flagChanged(cmd *cobra.Command, name string) bool {
	f := cmd.Flag(name)
	return f != nil && f.Changed
}

// recordedView groups the recording's snapshot as of at (recording.ParseTime's
// forms), as `sandtop list` grouped the host then: from the snapshot alone.
func recordedView(r *recording.Reader, rules model.Rules, at string) (*model.View, error) {
	first, last, _ := r.Range()
	t, err := recording.ParseTime(at, first, last, time.Local)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--at %w", err))
	}
	i, err := r.At(t)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--at %s: %w", at, err))
	}
	snap, err := r.Snapshot(i)
	if err != nil {
		return nil, fmt.Errorf("--at %s: %w", at, err)
	}
	// One look, as `list` takes: the recorded figures and kernel log,
	// but no durations (nothing is stuck yet).
	var w model.Watch
	return w.Apply(model.Build(snap, rules, nil)), nil
}
