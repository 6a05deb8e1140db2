package model

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// ruleTOML is a rule as a rules file spells it.
type ruleTOML struct {
	Name               string          `toml:"name"`
	Exe                string          `toml:"exe,omitempty"`
	Comm               string          `toml:"comm,omitempty"`
	Argv               string          `toml:"argv,omitempty"`
	ExcludeArgv        string          `toml:"exclude_argv,omitempty"`
	Flag               string          `toml:"flag,omitempty"`
	Cgroup             string          `toml:"cgroup,omitempty"`
	OwnCgroup          string          `toml:"own_cgroup,omitempty"`
	Cwd                string          `toml:"cwd,omitempty"`
	NamespaceFlag      string          `toml:"namespace_flag,omitempty"`
	NestedPIDNamespace bool            `toml:"nested_pid_namespace,omitempty"`
	IDTransform        string          `toml:"id_transform,omitempty"`
	ProcessGroup       bool            `toml:"process_group,omitempty"`
	Guest              bool            `toml:"guest,omitempty"`
	ExitsAfterWorkload bool            `toml:"exits_after_workload,omitempty"`
	HaltSignal         string          `toml:"halt_signal,omitempty"`
	Cleanup            []string        `toml:"cleanup,omitempty"`
	Leftovers          []string        `toml:"leftovers,omitempty"`
	Reconcile          []string        `toml:"reconcile,omitempty"`
	Inspect            []string        `toml:"inspect,omitempty"`
	Supervisor         *supervisorTOML `toml:"supervisor,omitempty"`
}

type supervisorTOML struct {
	Ancestor   string `toml:"ancestor,omitempty"`
	SocketFlag string `toml:"socket_flag,omitempty"`
}

// reString is a matcher's source, "" for an unset matcher.
func reString(re *regexp.Regexp) string {
	if re == nil {
		return ""
	}
	return re.String()
}

func (r *Rule) toTOML() ruleTOML {
	t := ruleTOML{
		Name:               r.Name,
		Exe:                reString(r.Exe),
		Comm:               reString(r.Comm),
		Argv:               reString(r.Argv),
		ExcludeArgv:        reString(r.ExcludeArgv),
		Flag:               r.Flag,
		Cgroup:             reString(r.Cgroup),
		OwnCgroup:          reString(r.OwnCgroup),
		Cwd:                reString(r.Cwd),
		NamespaceFlag:      r.NamespaceFlag,
		NestedPIDNamespace: r.NestedPIDNamespace,
		IDTransform:        string(r.IDTransform),
		ProcessGroup:       r.ProcessGroup,
		Guest:              r.Guest,
		ExitsAfterWorkload: r.ExitsAfterWorkload,
		Cleanup:            r.Cleanup,
		Leftovers:          r.Leftovers,
		Reconcile:          r.Reconcile,
		Inspect:            r.Inspect,
	}
	if r.HaltSignal != 0 {
		t.HaltSignal = SignalName(r.HaltSignal)
	}
	if !r.Supervisor.IsZero() {
		t.Supervisor = &supervisorTOML{
			Ancestor:   reString(r.Supervisor.Ancestor),
			SocketFlag: r.Supervisor.SocketFlag,
		}
	}
	return t
}

// WriteTOML prints the rules as a rules file that ParseRules accepts, each
// rule preceded by comments giving its source and its doc line.
func (rs Rules) WriteTOML(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# sandtop rules: the first rule that matches a process claims it.\n")
	for _, r := range rs {
		if r == nil {
			continue
		}
		b.WriteString("\n")
		comment(&b, "source: "+r.Source)
		if r.Doc != "" {
			comment(&b, r.Doc)
		}
		enc := toml.NewEncoder(&b)
		enc.Indent = ""
		doc := struct {
			Rule []ruleTOML `toml:"rule"`
		}{[]ruleTOML{r.toTOML()}}
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("rule %q: %w", r.Name, err)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func comment(b *strings.Builder, text string) {
	for _, l := range strings.Split(text, "\n") {
		b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
}
