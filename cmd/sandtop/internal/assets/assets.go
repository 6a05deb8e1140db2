// Package assets holds the files sandtop prints for an operator to install:
// the Prometheus alert rules for `sandtop serve`, the systemd units of its
// long-running commands, the Kubernetes DaemonSet that runs serve on every
// node and the Grafana dashboard of its metrics. They are embedded, so the
// binary always prints the files of its own version.
package assets

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"text/template"
)

//go:embed alerts.yml
var alerts []byte

// DefaultBinary is where `make install` puts sandtop (PREFIX=/usr/local),
// and where the units expect it unless told otherwise.
const DefaultBinary = "/usr/local/bin/sandtop"

// units holds one file per long-running command, units/sandtop-NAME.service:
// adding a command's unit is adding its file.
//
//go:embed units/*.service
var units embed.FS

// Alerts returns the Prometheus alerting rules file.
func Alerts() []byte { return slices.Clone(alerts) }

// Units lists the commands that have a systemd unit, sorted.
func Units() []string {
	entries, _ := fs.ReadDir(units, "units") // embedded: cannot fail
	var names []string
	for _, e := range entries {
		name, ok := strings.CutPrefix(strings.TrimSuffix(e.Name(), ".service"), "sandtop-")
		if ok {
			names = append(names, name)
		}
	}
	return names
}

// UnitFile names the unit of a command as systemd will know it.
func UnitFile(name string) string { return "sandtop-" + name + ".service" }

// Unit returns the systemd unit of one command ("serve"), running the
// binary at DefaultBinary.
func Unit(name string) ([]byte, error) {
	b, err := fs.ReadFile(units, "units/"+UnitFile(name))
	if err != nil {
		return nil, fmt.Errorf("no systemd unit for %q (have: %s)", name, strings.Join(Units(), ", "))
	}
	return b, nil
}

// UnitFor returns the unit of one command running the binary at bin, an
// absolute path (systemd wants one) with nothing a unit file would read
// as syntax.
func UnitFor(name, bin string) ([]byte, error) {
	if !safePath.MatchString(bin) {
		return nil, fmt.Errorf("--bin %q: want an absolute path of letters, digits and . _ - + / only", bin)
	}
	b, err := Unit(name)
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(b, []byte("ExecStart="+DefaultBinary+" "), []byte("ExecStart="+bin+" ")), nil
}

var safePath = regexp.MustCompile(`^/[A-Za-z0-9._+/-]*$`)

//go:embed kubernetes.yaml
var kubernetes string

var kubernetesTmpl = template.Must(template.New("kubernetes.yaml").Parse(kubernetes))

// KubernetesOptions fill in the manifest.
type KubernetesOptions struct {
	Image, Namespace, Version string
	// ServiceMonitor adds a Service and a Prometheus Operator
	// ServiceMonitor.
	ServiceMonitor bool
}

var (
	imageRef = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@-]*$`)
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// Kubernetes returns the manifest: a ServiceAccount and a DaemonSet that
// runs serve on every node, and with o.ServiceMonitor a Service and a
// ServiceMonitor. The values are checked, not quoted: an image reference
// and a namespace cannot hold YAML syntax.
func Kubernetes(o KubernetesOptions) ([]byte, error) {
	if !imageRef.MatchString(o.Image) {
		return nil, fmt.Errorf("--image %q: not an image reference", o.Image)
	}
	if len(o.Namespace) > 63 || !dnsLabel.MatchString(o.Namespace) {
		return nil, fmt.Errorf("--namespace %q: want a DNS label (lower-case letters, digits and -, at most 63)", o.Namespace)
	}
	var b bytes.Buffer
	if err := kubernetesTmpl.Execute(&b, o); err != nil {
		return nil, fmt.Errorf("kubernetes manifest: %w", err)
	}
	return b.Bytes(), nil
}

//go:embed grafana.json
var grafana []byte

// Grafana returns the Grafana dashboard (its JSON model) of serve's
// metrics.
func Grafana() []byte { return slices.Clone(grafana) }
