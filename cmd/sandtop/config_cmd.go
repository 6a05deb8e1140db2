package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/assets"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print files to install: alert rules, systemd units, a Kubernetes DaemonSet, a Grafana dashboard",
		Long: `Print a file sandtop ships for an operator to install, embedded in this
binary so that it matches this version's metrics and flags.`,
		Example: `  sandtop config alerts > /etc/prometheus/rules/sandtop.yml
  sandtop config systemd serve > /etc/systemd/system/sandtop-serve.service
  sandtop config kubernetes --image registry.example/sandtop:v1 | kubectl apply -f -`,
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
	}, &cobra.Command{
		Use:   "grafana",
		Short: "Print a Grafana dashboard for the metrics of `sandtop serve`",
		Long: `Print a Grafana dashboard (its JSON model, to import) for the metrics of
` + "`sandtop serve`" + `: sandboxes by runtime and badge over time, troubled sandboxes
per host (each host linking to its serve page), orphans by how long they have
been orphaned, the busiest and largest sandboxes (from hosts whose serve runs
--per-sandbox), and serve's scan duration, errors and freshness. Its
variables: the Prometheus data source, the hosts (instance) and runtimes.`,
		Example: `  sandtop config grafana > sandtop-dashboard.json   # then Dashboards > New > Import
  curl -s -u admin:… -H 'Content-Type: application/json' \
    -d "{\"dashboard\": $(sandtop config grafana), \"overwrite\": true}" http://grafana:3000/api/dashboards/db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(assets.Grafana())
			return err
		},
	}, newConfigSystemdCmd(), newConfigKubernetesCmd())
	return cmd
}

func newConfigSystemdCmd() *cobra.Command {
	names := assets.Units()
	bin := assets.DefaultBinary
	cmd := &cobra.Command{
		Use:   "systemd [COMMAND]",
		Short: "Print the systemd unit that runs a sandtop command (default: serve)",
		Long: `Print the systemd unit that runs a long-running sandtop command as a service,
hardened to what the command needs. COMMAND is one of: ` + strings.Join(names, ", ") + ` (default serve).
The unit runs the binary at --bin, by default ` + assets.DefaultBinary + `, where
` + "`make install`" + ` puts it; sandtop warns when nothing is there.`,
		Example: `  sandtop config systemd serve > /etc/systemd/system/sandtop-serve.service
  sandtop config systemd --bin "$(command -v sandtop)" serve > /etc/systemd/system/sandtop-serve.service
  systemctl daemon-reload && systemctl enable --now sandtop-serve`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: names,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "serve"
			if len(args) == 1 {
				name = args[0]
			}
			unit, err := assets.UnitFor(name, bin)
			if err != nil {
				return usageErr(err)
			}
			if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "sandtop config systemd: no executable at %s yet: install it there (make install), or give --bin\n", bin)
			}
			_, err = cmd.OutOrStdout().Write(unit)
			return err
		},
	}
	cmd.Flags().StringVar(&bin, "bin", bin, "absolute path of the sandtop binary the unit runs")
	return cmd
}

func newConfigKubernetesCmd() *cobra.Command {
	o := assets.KubernetesOptions{Image: "sandtop:" + version, Namespace: "kube-system", Version: version}
	cmd := &cobra.Command{
		Use:   "kubernetes",
		Short: "Print a DaemonSet that runs `sandtop serve` on every node",
		Long: `Print a Kubernetes manifest: a ServiceAccount and a DaemonSet that runs
` + "`sandtop serve`" + ` on every node, seeing the node's processes (hostPID) through
read-only mounts of its /proc and /sys/fs/cgroup, as root with only the
SYS_PTRACE and DAC_READ_SEARCH capabilities, a read-only root file system, a
readiness probe on /healthz and the prometheus.io/scrape annotations. With
--service-monitor, also a Service and a Prometheus Operator ServiceMonitor.
--image names an image with the static binary at /usr/local/bin/sandtop.`,
		Example: `  sandtop config kubernetes --image registry.example/sandtop:v1 | kubectl apply -f -
  sandtop config kubernetes --image registry.example/sandtop:v1 --namespace monitoring --service-monitor`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := assets.Kubernetes(o)
			if err != nil {
				return usageErr(err)
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Image, "image", o.Image, "image holding the static sandtop binary at /usr/local/bin/sandtop")
	f.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace of the DaemonSet and its ServiceAccount")
	f.BoolVar(&o.ServiceMonitor, "service-monitor", false, "also print a Service and a ServiceMonitor (Prometheus Operator)")
	return cmd
}
