package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/assets"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print files to install: Prometheus alert rules, systemd units",
		Long: `Print a file sandtop ships for an operator to install, embedded in this
binary so that it matches this version's metrics and flags.`,
		Example: `  sandtop config alerts > /etc/prometheus/rules/sandtop.yml
  sandtop config systemd serve > /etc/systemd/system/sandtop-serve.service`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "alerts",
		Short: "Print Prometheus alert rules for the metrics of `sandtop serve`",
		Long: `Print Prometheus alerting rules for the metrics of ` + "`sandtop serve`" + `: sandboxes
orphaned for 15 minutes, an orphan older than an hour, sandboxes paused for
over an hour, zombies piling up, the exporter down or absent, its scans
failing or stale. Each alert's summary says what to run on the host. The
rules assume the scrape job is named "sandtop".`,
		Example: `  sandtop config alerts > /etc/prometheus/rules/sandtop.yml
  promtool check rules /etc/prometheus/rules/sandtop.yml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(assets.Alerts())
			return err
		},
	}, newConfigSystemdCmd())
	return cmd
}

func newConfigSystemdCmd() *cobra.Command {
	names := assets.Units()
	return &cobra.Command{
		Use:   "systemd [COMMAND]",
		Short: "Print the systemd unit that runs a sandtop command (default: serve)",
		Long: `Print the systemd unit that runs a long-running sandtop command as a service,
hardened to what the command needs. COMMAND is one of: ` + strings.Join(names, ", ") + ` (default serve).
The unit expects the binary at /usr/local/bin/sandtop.`,
		Example: `  sandtop config systemd serve > /etc/systemd/system/sandtop-serve.service
  systemctl daemon-reload && systemctl enable --now sandtop-serve`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: names,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "serve"
			if len(args) == 1 {
				name = args[0]
			}
			unit, err := assets.Unit(name)
			if err != nil {
				return usageErr(err)
			}
			_, err = cmd.OutOrStdout().Write(unit)
			return err
		},
	}
}
