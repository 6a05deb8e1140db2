// Command sandsim runs fleets of fake sandboxes made of real processes,
// shaped like those of real sandbox runtimes, for tests, demos and
// screenshots.
//
//	sandsim fleet [--scenario demo|seeds|bulk:N|bulk-orphans:N] [--json] [--no-stdin]
//	sandsim spec [--scenario …]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
)

func main() {
	fleet.MaybeRun()
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sandsim:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: sandsim fleet|spec [--scenario demo|seeds|bulk:N|bulk-orphans:N]")
	}
	fs := flag.NewFlagSet("sandsim "+args[0], flag.ContinueOnError)
	scenario := fs.String("scenario", "demo", "demo, seeds, bulk:N or bulk-orphans:N (every sandbox an orphaned containerd shim)")
	asJSON := fs.Bool("json", false, "print the manifest as JSON instead of a summary")
	noStdin := fs.Bool("no-stdin", false, "do not stop when stdin reaches EOF")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // the flag package has printed the usage
		}
		return err
	}
	spec, err := fleet.Scenario(*scenario)
	if err != nil {
		return err
	}
	switch args[0] {
	case "spec":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(spec)
	case "fleet":
		return runFleet(spec, *asJSON, *noStdin, stdin, stdout)
	}
	return fmt.Errorf("unknown command %q (want fleet or spec)", args[0])
}

// runFleet runs a fleet in the foreground until SIGINT, SIGTERM or EOF on
// stdin, then tears it down.
func runFleet(spec fleet.Spec, asJSON, noStdin bool, stdin io.Reader, stdout io.Writer) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	f, err := fleet.Start(ctx, spec, fleet.Options{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	m := f.Manifest()
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(m)
	} else {
		err = fleet.WriteSummary(stdout, &m)
	}
	if err != nil {
		return err
	}
	eof := make(chan struct{})
	if !noStdin {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			close(eof)
		}()
	}
	select {
	case <-ctx.Done():
	case <-eof:
	}
	return nil
}
