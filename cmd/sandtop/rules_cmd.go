package main

import (
	"fmt"

	"github.com/sandtop/sandtop/ui/format"
	"github.com/spf13/cobra"
)

func newRulesCmd(g *globals) *cobra.Command {
	var check string
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Print the effective rules, or check a rules file",
		Long: `Print the rules sandtop uses, as a TOML file: the rules file's rules first,
then the built-in presets (unless --no-presets). With --check FILE, validate a
rules file and report every error with its line and key.

THE RULES FILE

sandtop reads --rules FILE, else $XDG_CONFIG_HOME/sandtop/rules.toml, else
/etc/sandtop/rules.toml. Its rules are tried before the presets, in order;
the first rule that matches a process claims it. A broken file stops sandtop
with the file, line and key of every error.

Each [[rule]] table says how one runtime's processes look. Every matcher
given must match; the sandbox ID is the named group (?P<id>…) of whichever
matcher captured it, or the value of flag.

  name          shown as the sandbox's runtime (required)
  exe           regex on argv[0], then on the exe path
  comm          regex on /proc/PID/comm (15 bytes: prefer exe or argv)
  argv          regex on argv joined by spaces
  exclude_argv  the rule does not match when this regex matches argv
  flag          the ID is this flag's value: "--id X" or "--id=X"
  cgroup        regex on the cgroup v2 path (the v1 freezer path without v2)
  own_cgroup    regex on a whole cgroup path the runtime gives one sandbox
                at a time though it names no ID (a pool slot): it may be
                the sandbox's dedicated cgroup while nothing else is in it
  cwd           regex on the working directory
  id_transform  "underscore-to-dash" or "systemd-unescape", applied to the ID
  namespace_flag  the runtime's namespace is this flag's value (or a
                (?P<ns>…) group): the same ID in two namespaces is two
                sandboxes, shown and killed as namespace/id
  nested_pid_namespace  true: match only processes in a pid namespace
                below the scanned one (a container, not a host service)
  process_group true: the matched process's whole process group joins
  guest         true: the matched process runs the guest (a VMM, a
                Sentry): its cost is the workload's, not the runtime's
  exits_after_workload  true: the matched process is a monitor that exits
                by itself after recording its workload's exit (podman's
                conmon): a kill lets it finish before stopping it
  halt_signal   the signal a kill sends, in place of SIGTERM, to the
                init at the top of the sandbox (pid 1 of its pid
                namespace): the runtime's halt signal, "SIGPWR" for LXC,
                "SIGRTMIN+3" for a systemd init; a system init may take
                SIGTERM as "reboot", and its runtime start it again
  supervisor    { ancestor = 'regex on an ancestor's argv' } (16 levels up)
                or { socket_flag = "-address" } (alive while it listens);
                a sandbox whose supervisor is gone is an orphan
  cleanup       paths removed after killing an orphan; {id} and any other
                named group are filled in; a path is used only when it is
                absolute, clean, and has the ID as one of its components;
                read the other way round (a path there whose ID has no
                live process), they find the leftovers of dead sandboxes
  leftovers     more such templates, for leftovers only, with {id} as
                their one placeholder, a whole component below a literal
                directory: ["/var/lib/vm0/workspaces/{id}"]
  reconcile     the runtime's own command, run after a kill with
                --reconcile so the runtime forgets the sandbox: a fixed
                program name, then arguments with {id} and other captures:
                ["podman", "rm", "--force", "{id}"]
  inspect       the runtime's own command that prints its view of the
                sandbox, run after reconcile and quoted (JSON with
                "status", or "State": {"Status"}, is read for the state):
                ["podman", "container", "inspect", "{id}"]

Rules with the same name are one runtime: a process found by any of them
joins the same sandbox when runtime, namespace and ID agree.

A home-grown runtime that starts "agentbox --box <id>" under a daemon
"agentd" and keeps its files in /var/lib/agentbox/<id>:

  [[rule]]
  name = "agentbox"
  exe = '(^|/)agentbox$'
  flag = "--box"
  supervisor = { ancestor = '(^|/)agentd( |$)' }
  cleanup = ["/var/lib/agentbox/{id}"]`,
		Example: `  sandtop help rules                        # this text
  sandtop rules
  sandtop rules --check ./rules.toml
  sandtop rules > /etc/sandtop/rules.toml   # start from the presets`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if check != "" {
				rs, err := loadRulesFile(check)
				if err != nil {
					return &exitError{code: exitFailure, err: err}
				}
				fmt.Fprintf(out, "%s: %s, OK\n", check, format.Count(len(rs), "rule", "rules"))
				return nil
			}
			rs, err := g.rules()
			if err != nil {
				return err
			}
			return rs.WriteTOML(out)
		},
	}
	cmd.Flags().StringVar(&check, "check", "", "validate this rules file and exit")
	return cmd
}
