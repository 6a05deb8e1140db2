package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/ui/format"
)

func newDemoCmd(g *globals) *cobra.Command {
	o := &tuiOpts{}
	scenario := "demo"
	var seed uint64
	var manifest string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Open the live screen on a fleet of fake sandboxes made of real processes",
		Long: `Start a sandsim fleet that shows every case sandtop handles — a healthy
Firecracker VM with its runner and an orphaned one, a boxlite box with an
inner pid namespace in its own cgroup, a paused (frozen) Cube sandbox,
containerd and Docker containers, zombies, a process that ignores SIGTERM,
one that keeps forking — and open the live screen on it, so you can try
the kill flow for real. Quitting tears the whole fleet down; so does
Ctrl-C, a closed terminal, or sandtop dying.

As a normal user there are no cgroups: "paused" sandboxes are SIGSTOPped
instead, and the demo says so.`,
		Example: `  sandtop demo
  sandtop demo --read-only
  sandtop demo --scenario seeds     # one sandbox per seed case`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Fail before starting a fleet nobody could look at.
			if _, _, err := terminal(cmd); err != nil {
				return err
			}
			spec, err := fleet.Scenario(scenario)
			if err != nil {
				return usageErr(err)
			}
			spec.Seed = seed
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			start := time.Now()
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			f, err := fleet.Start(sctx, spec, fleet.Options{Exe: exe})
			cancel()
			if err != nil {
				return fmt.Errorf("demo fleet: %w", err)
			}
			// Deferred, so a panic on the way out still tears the fleet
			// down; should sandtop be killed outright, the fleet's owner
			// dies with it (PR_SET_PDEATHSIG) and cleans up on its own.
			defer func() {
				if err := f.Close(); err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "sandtop: demo fleet:", err)
					return
				}
				fmt.Fprintln(cmd.ErrOrStderr(), "demo fleet torn down: nothing left behind")
			}()
			m := f.Manifest()
			if manifest != "" {
				b, err := json.MarshalIndent(m, "", "  ")
				if err != nil {
					return fmt.Errorf("demo: manifest: %w", err)
				}
				if err := os.WriteFile(manifest, b, 0o644); err != nil {
					return fmt.Errorf("demo: %w", err)
				}
			}
			took := time.Since(start).Round(time.Millisecond)
			v, err := g.view(false, nil)
			if err != nil {
				return err
			}
			started, note := demoSummary(m, v, took)
			fmt.Fprintln(cmd.ErrOrStderr(), "demo fleet:", started)
			for _, n := range m.Notes {
				fmt.Fprintln(cmd.ErrOrStderr(), "note:", n)
			}
			// The alternate screen hides what was printed above until
			// quitting: the screen's status line carries the note.
			o.note = note
			cmd.SetContext(ctx)
			return runTUI(cmd, g, o)
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVar(&scenario, "scenario", scenario, "fleet to start: demo, seeds, or bulk:N")
	// Same IDs on every run, for screenshots.
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed for the fleet's sandbox IDs (0: random)")
	_ = cmd.Flags().MarkHidden("seed")
	// What the fleet is made of, for scripts that drive the demo.
	cmd.Flags().StringVar(&manifest, "manifest", "", "write the fleet's manifest (JSON) to this file")
	_ = cmd.Flags().MarkHidden("manifest")
	return cmd
}

// demoSummary says how many sandboxes the fleet started and how many of
// them the screen shows, so the count on stderr is the count on screen
// (without root some cannot be recognised: no cgroup to be found by), and
// a note for the screen's status line when the fleet is not what it would
// be as root.
func demoSummary(m fleet.Manifest, v *model.View, took time.Duration) (started, note string) {
	var hidden, stopped []string
	for i := range m.Sandboxes {
		sb := &m.Sandboxes[i]
		if v.SandboxOf(sb.Root().Identity) == nil {
			hidden = append(hidden, sb.Name)
		}
		if sb.Paused == fleet.PauseStop && sb.Spec.Pause != fleet.PauseStop {
			stopped = append(stopped, sb.Name)
		}
	}
	started = format.Count(len(m.Sandboxes), "sandbox", "sandboxes") + " started in " + took.String()
	if len(hidden) > 0 {
		started += fmt.Sprintf(", %d shown (%s not recognisable without its cgroup)", len(m.Sandboxes)-len(hidden), strings.Join(hidden, ", "))
	}
	var notes []string
	if len(stopped) > 0 {
		notes = append(notes, "paused by SIGSTOP, not frozen (no cgroups without root): "+strings.Join(stopped, ", "))
	}
	if len(hidden) > 0 {
		notes = append(notes, "not shown without root: "+strings.Join(hidden, ", "))
	}
	if len(notes) > 0 {
		note = "demo: " + strings.Join(notes, "; ")
	}
	return started, note
}
