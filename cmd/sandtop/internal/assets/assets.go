// Package assets holds the files sandtop prints for an operator to install:
// the Prometheus alert rules for `sandtop serve` and the systemd units of
// its long-running commands. They are embedded, so the binary always
// prints the rules and units of its own version.
package assets

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

//go:embed alerts.yml
var alerts []byte

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

// Unit returns the systemd unit of one command ("serve").
func Unit(name string) ([]byte, error) {
	b, err := fs.ReadFile(units, "units/"+UnitFile(name))
	if err != nil {
		return nil, fmt.Errorf("no systemd unit for %q (have: %s)", name, strings.Join(Units(), ", "))
	}
	return b, nil
}
