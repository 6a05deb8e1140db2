package model

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc"
)

// FuzzCapture feeds what a process controls (argv, cwd) and what a
// runtime names (its cgroup) to every preset and to rules that capture
// IDs from each: whatever the input, a captured ID or namespace is within
// MaxIDBytes or refused; every cleanup path the captures expand to is
// absolute, clean, below the template's literal prefix and names the ID
// as one whole component; a reconcile command has no hole; and the ID,
// escaped, holds nothing a terminal would act on.
func FuzzCapture(f *testing.F) {
	f.Add("/usr/bin/containerd-shim-runc-v2\x00-namespace\x00moby\x00-id\x00abc\x00-address\x00/run/x.sock", "/", "/docker/abc")
	f.Add("firecracker\x00--api-sock\x00/run/vm0/sock/../x/\x00--id\x00..", "/srv/vm0/workspaces/..", "/")
	f.Add("agentbox\x00--box\x00a/../../etc", "/var/lib/x/workspaces/\x1b]2;t\x07", "/boxlite/"+strings.Repeat("z", 300))
	f.Add("agentbox\x00--box="+strings.Repeat("\u202e", 200)+"\x00--ns\x00n/s", "/", "/machine.slice/machine-a\\x2d\\x2fb.scope")
	f.Add("qemu-system-x86_64\x00-name\x00sandbox-\x00-name\x00sandbox-{id}", "//", "/kubepods/pod_1_2/x")
	rules := Effective(Rules{
		{Name: "flag", Exe: regexp.MustCompile(`^agentbox$`), Flag: "--box", NamespaceFlag: "--ns", Cleanup: []string{"/var/lib/agentbox/{ns}/{id}"},
			Reconcile: []string{"agentbox", "rm", "{id}"}},
		{Name: "cwd", Cwd: regexp.MustCompile(`^(?P<base>.*)/workspaces/(?P<id>.*)$`), Cleanup: []string{"{base}/workspaces/{id}", "/run/x/{id}"}},
		{Name: "cgroup", Cgroup: regexp.MustCompile(`^/(?P<ns>[^/]*)/(?P<id>.*)$`), IDTransform: SystemdUnescape, Cleanup: []string{"/run/cg/{ns}/{id}"}},
	}, true)
	for _, r := range rules {
		if err := r.Validate(); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, cmdline, cwd, cgroup string) {
		p := &proc.Process{PID: 7, PPID: 1, Comm: "x", Argv: strings.Split(cmdline, "\x00"), Exe: "/usr/bin/x", Cwd: cwd, Cgroup: cgroup, NSpid: []int{7, 1}}
		m, ok := rules.Match(p)
		if !ok {
			return
		}
		for what, v := range map[string]string{"ID": m.ID, "namespace": m.Namespace} {
			if len(v) > MaxIDBytes && !IsRefusedID(v) || IsRefusedID(v) && len(v) > 2*MaxIDBytes {
				t.Fatalf("%s of %d bytes kept: %q", what, len(v), v)
			}
		}
		for _, r := range Printable(m.ID) {
			if Unsafe(r) {
				t.Fatalf("Printable(%q) holds %U", m.ID, r)
			}
		}
		paths, _ := m.CleanupPaths()
		for _, pth := range paths {
			if !path.IsAbs(pth) || path.Clean(pth) != pth || pth == "/" || !strings.Contains("/"+pth+"/", "/"+m.ID+"/") || IsRefusedID(m.ID) {
				t.Fatalf("rule %s, ID %q: unsafe cleanup path %q", m.Rule.Name, m.ID, pth)
			}
			if m.Rule.Name == "flag" && !strings.HasPrefix(pth, "/var/lib/agentbox/") || m.Rule.Name == "cgroup" && !strings.HasPrefix(pth, "/run/cg/") {
				t.Fatalf("rule %s: cleanup path %q left the template's prefix", m.Rule.Name, pth)
			}
		}
		for _, tpl := range m.Rule.Cleanup {
			if p := m.Expand(tpl); !strings.Contains(tpl, "{base}") && slices.Contains(paths, p) && strings.Count(p, "/") != strings.Count(tpl, "/") {
				t.Fatalf("rule %s: a capture added path components: %q from %q", m.Rule.Name, p, tpl)
			}
		}
		if argv, err := m.ReconcileArgv(); err == nil {
			for _, a := range argv {
				if strings.ContainsAny(a, "{}") && !strings.ContainsAny(m.ID+m.Namespace, "{}") {
					t.Fatalf("reconcile with a hole: %q", argv)
				}
			}
		}
	})
}
