package model

import (
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/proc"
)

func TestLeftoverGlobs(t *testing.T) {
	explicit := &Rule{Name: "agentbox", Exe: regexp.MustCompile(`agentbox$`), Flag: "--box",
		Leftovers: []string{"/var/lib/agentbox/{id}", "/{id}", "/srv/{id}-x", "/srv/{base}/{id}", "/*/{id}", "/var/{id}/{id}"}}
	cases := []struct {
		name  string
		rules Rules
		procs []*proc.Process
		want  []string
	}{
		{
			name:  "no live sandbox: only templates whose sole placeholder is {id}",
			rules: Rules{vm0Rule},
			want:  []string{"/run/vm0/sock/*"},
		},
		{
			name:  "a live VM's base fills {base}",
			rules: Rules{vm0Rule},
			procs: []*proc.Process{
				pr(100, 1, "/usr/bin/runner start --config /etc/vm0.yaml"),
				pr(101, 100, "/usr/bin/firecracker --api-sock /run/vm0/sock/aaaa-1111/api.sock", cwd("/var/lib/vm0/workspaces/aaaa-1111")),
			},
			want: []string{"/run/vm0/sock/*", "/var/lib/vm0/workspaces/*"},
		},
		{
			name:  "explicit leftovers; never a glob of / or an ID that is not a whole component",
			rules: Rules{explicit},
			want:  []string{"/var/lib/agentbox/*"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := NewLeftovers(c.rules)
			v := Build(snap(c.procs...), c.rules, nil)
			var got []string
			for _, g := range f.Globs(v) {
				got = append(got, g.Pattern)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("globs = %q, want %q", got, c.want)
			}
		})
	}
}

// TestLeftoverGlobsRemembered: the base of a VM seen alive earlier is still
// looked at after the VM died.
func TestLeftoverGlobsRemembered(t *testing.T) {
	rules := Rules{vm0Rule}
	f := NewLeftovers(rules)
	f.Globs(Build(snap(pr(101, 1, "/usr/bin/firecracker --api-sock /run/vm0/sock/aaaa/x", cwd("/data/vm0/workspaces/aaaa"))), rules, nil))
	var got []string
	for _, g := range f.Globs(Build(snap(), rules, nil)) {
		got = append(got, g.Pattern)
	}
	if !slices.Contains(got, "/data/vm0/workspaces/*") {
		t.Fatalf("globs after the VM died = %q, want the remembered base", got)
	}
}

func TestLeftoverApply(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	old := now.Add(-time.Hour)
	boxRule := &Rule{Name: "boxlite", Cgroup: regexp.MustCompile(`(?:^|/)boxlite/(?P<id>[A-Za-z0-9_-]{1,128})(?:/|$)`), Source: "preset"}
	dockerRule := &Rule{Name: "docker", Cgroup: regexp.MustCompile(`(?:^|/)docker-(?P<id>[0-9a-f]{8})\.scope(?:/|$)`), Source: "preset"}
	rules := Rules{vm0Rule, boxRule, dockerRule}
	runner := pr(100, 1, "/usr/bin/runner start --config /etc/vm0.yaml")
	liveVM := pr(101, 100, "/usr/bin/firecracker --api-sock /run/vm0/sock/live-1/api.sock", cwd("/var/lib/vm0/workspaces/live-1"))
	liveBox := pr(200, 1, "/boxes/livebox/bin/boxlite-shim", cgroup("/boxlite/livebox"))
	// With systemd as PID 1 a unit's cgroup is systemd's to remove;
	// without it, "….scope" is only a name Docker chose.
	systemd := pr(1, 0, "/sbin/init splash", func(p *proc.Process) { p.Exe = "/usr/lib/systemd/systemd" })
	paths := func(ids ...string) []proc.PathEntry {
		var out []proc.PathEntry
		for _, id := range ids {
			out = append(out,
				proc.PathEntry{Path: "/var/lib/vm0/workspaces/" + id, Kind: proc.KindDir, ModTime: old},
				proc.PathEntry{Path: "/run/vm0/sock/" + id, Kind: proc.KindDir, ModTime: old})
		}
		return out
	}
	cgroups := []proc.CgroupDir{
		{Path: "/boxlite/deadbox", Dir: "/sys/fs/cgroup/boxlite/deadbox", ModTime: old},
		{Path: "/boxlite/livebox", Dir: "/sys/fs/cgroup/boxlite/livebox", ModTime: old, Populated: true},
		{Path: "/boxlite/busybox", Dir: "/sys/fs/cgroup/boxlite/busybox", ModTime: old, Populated: true},
		{Path: "/system.slice/docker-0123abcd.scope", Dir: "/sys/fs/cgroup/system.slice/docker-0123abcd.scope", ModTime: old},
	}
	type want struct {
		id, runtime string
		kept        []string // paths kept
		removable   []string
	}
	cases := []struct {
		name  string
		procs []*proc.Process
		paths []proc.PathEntry
		want  []want
	}{
		{
			name:  "runner alive: dirs of a dead VM are reported and kept",
			procs: []*proc.Process{systemd, runner, liveVM, liveBox},
			paths: paths("live-1", "dead-1"),
			want: []want{
				{id: "0123abcd", runtime: "docker", kept: []string{"/system.slice/docker-0123abcd.scope"}},
				{id: "dead-1", runtime: "vm0", kept: []string{"/var/lib/vm0/workspaces/dead-1", "/run/vm0/sock/dead-1"}},
				{id: "deadbox", runtime: "boxlite", removable: []string{"/boxlite/deadbox"}},
			},
		},
		{
			// The dead VM's runner is gone; another runner, of another
			// --config and another workspaces base, runs a healthy VM.
			name: "another runner's base: dirs of the dead VM are removable",
			procs: []*proc.Process{pr(300, 1, "/usr/bin/runner start --config /b/vm0.yaml"),
				pr(301, 300, "/usr/bin/firecracker --api-sock /run/vm0/sock/live-2/api.sock", cwd("/b/workspaces/live-2")), liveBox},
			paths: paths("dead-1"),
			want: []want{
				{id: "0123abcd", runtime: "docker", removable: []string{"/system.slice/docker-0123abcd.scope"}},
				{id: "dead-1", runtime: "vm0", removable: []string{"/var/lib/vm0/workspaces/dead-1", "/run/vm0/sock/dead-1"}},
				{id: "deadbox", runtime: "boxlite", removable: []string{"/boxlite/deadbox"}},
			},
		},
		{
			// A runner with no VM yet may be about to start one there.
			name:  "an idle runner: dirs of the dead VM are kept",
			procs: []*proc.Process{systemd, pr(300, 1, "/usr/bin/runner start --config /b/vm0.yaml"), liveBox},
			paths: paths("dead-1"),
			want: []want{
				{id: "0123abcd", runtime: "docker", kept: []string{"/system.slice/docker-0123abcd.scope"}},
				{id: "dead-1", runtime: "vm0", kept: []string{"/var/lib/vm0/workspaces/dead-1", "/run/vm0/sock/dead-1"}},
				{id: "deadbox", runtime: "boxlite", removable: []string{"/boxlite/deadbox"}},
			},
		},
		{
			name:  "no runner: dirs of the dead VM are removable",
			procs: []*proc.Process{liveBox},
			paths: paths("dead-1"),
			want: []want{
				{id: "0123abcd", runtime: "docker", removable: []string{"/system.slice/docker-0123abcd.scope"}},
				{id: "dead-1", runtime: "vm0", removable: []string{"/var/lib/vm0/workspaces/dead-1", "/run/vm0/sock/dead-1"}},
				{id: "deadbox", runtime: "boxlite", removable: []string{"/boxlite/deadbox"}},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := snap(c.procs...)
			v := Build(s, rules, nil)
			f := NewLeftovers(rules)
			f.Record(Build(snap(runner, liveVM), rules, nil)) // learns /var/lib/vm0
			lv := f.Apply(v, Found{Globs: f.Globs(v), Paths: c.paths, Cgroups: cgroups})
			var got []want
			for _, sb := range lv.Sandboxes {
				if len(sb.Leftovers) == 0 {
					if sb.Root == nil {
						t.Errorf("sandbox %s: no process and no leftover", sb.ID)
					}
					continue
				}
				if len(sb.Members) != 0 || sb.Root != nil || !sb.HasBadge(BadgeLeftover) || lv.Sandbox(sb.ID) != sb {
					t.Errorf("leftover sandbox %s: members %d, root %v, badges %v", sb.ID, len(sb.Members), sb.Root, sb.Badges)
				}
				w := want{id: sb.ID, runtime: sb.Runtime}
				for _, l := range sb.Leftovers {
					if l.Why == "" || l.Age(now) != time.Hour {
						t.Errorf("%s: why %q, age %v", l.Path, l.Why, l.Age(now))
					}
					if l.Removable() {
						w.removable = append(w.removable, l.Path)
					} else {
						w.kept = append(w.kept, l.Path)
					}
				}
				got = append(got, w)
			}
			slices.SortFunc(got, func(a, b want) int { return cmpString(a.id, b.id) })
			if len(got) != len(c.want) {
				t.Fatalf("leftover sandboxes %+v, want %+v", got, c.want)
			}
			for i := range got {
				g, w := got[i], c.want[i]
				slices.Sort(g.kept)
				slices.Sort(w.kept)
				slices.Sort(g.removable)
				slices.Sort(w.removable)
				if g.id != w.id || g.runtime != w.runtime || !slices.Equal(g.kept, w.kept) || !slices.Equal(g.removable, w.removable) {
					t.Errorf("got %+v, want %+v", g, w)
				}
			}
			// The view built from is untouched, and a Builder given the
			// augmented view as prev still reuses its own.
			if v.Sandbox("dead-1") != nil || v.Sandbox("deadbox") != nil {
				t.Error("Apply changed the view it was given")
			}
		})
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestLeftoverNothingFound(t *testing.T) {
	rules := Rules{vm0Rule}
	v := Build(snap(), rules, nil)
	f := NewLeftovers(rules)
	if got := f.Apply(v, Found{Globs: f.Globs(v)}); got != v {
		t.Fatal("Apply with nothing found must return the view itself")
	}
}

func TestIsSystemdUnit(t *testing.T) {
	for path, want := range map[string]bool{
		"/system.slice/docker-ab.scope":                     true,
		"/machine.slice/machine-x.scope":                    true,
		"/kubepods.slice/kubepods-pod1.slice":               true,
		"/user.slice/user-0.slice/user@0.service/boxlite/a": false,
		"/boxlite/a":   false,
		"/default/abc": false,
	} {
		if got := IsSystemdUnit(path); got != want {
			t.Errorf("IsSystemdUnit(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestParseLeftoversKey(t *testing.T) {
	good := `[[rule]]
name = "agentbox"
exe = '(^|/)agentbox$'
flag = "--box"
leftovers = ["/var/lib/agentbox/{id}", "/run/agentbox/{id}/sock", "netns:agentbox-{id}", "link:ab{id}", "mount:/var/lib/agentbox/{id}/rootfs", "cgroup:/agentbox/{id}", "socket:/run/agentbox/{id}/api.sock", "dir:/srv/agentbox/{id}", "file:/run/agentbox/{id}/pid"]
`
	rs, err := ParseRules([]byte(good), "good.toml")
	if err != nil || len(rs) != 1 || len(rs[0].Leftovers) != 9 {
		t.Fatalf("ParseRules: %v, %+v", err, rs)
	}
	for tmpl, want := range map[string]string{
		"/{id}":                    "right under /",
		"/var/{base}/{id}":         "no matcher captures",
		"cgroup:/fc/{base}/{id}":   "only {id} is filled in",
		"cgroup:/{id}":             "right under /",
		"mount:/{id}":              "right under /",
		"socket:/run/x{id}":        "whole path component",
		"netns:{id}":               "literal part",
		"netns:vm0/{id}":           "no '/'",
		"netns:../{id}":            "no '/'",
		"netns:x{id}{id}":          "exactly once",
		"link:tap{base}{id}":       "exactly once",
		"link:verylongprefix0{id}": "at most 15",
		"link:t*{id}":              "glob",
		"/var/x{id}":               "whole path component",
		"/var/{id}/{id}":           "exactly once",
		"var/{id}":                 "absolute, clean",
		"/var/../{id}":             "absolute, clean",
		"/var/*/{id}":              "literal",
		"/var/lib/agentbox/{id":    `"{" without "}"`,
	} {
		_, err := ParseRules([]byte(strings.Replace(good, "/var/lib/agentbox/{id}", tmpl, 1)), "bad.toml")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `key "leftovers"`) {
			t.Errorf("leftovers %q: error %v, want one saying %q", tmpl, err, want)
		}
	}
}

// TestLeftoverApplySharesUnchangedSandboxes: the live screen applies the
// same leftovers every refresh; a sandbox judged the same as last time is
// the last view's, and one whose leftovers or judgement changed is new.
func TestLeftoverApplySharesUnchangedSandboxes(t *testing.T) {
	old := time.Unix(1_700_000_000, 0)
	rules := Rules{vm0Rule}
	runner := pr(100, 1, "/usr/bin/runner start --config /etc/vm0.yaml")
	liveVM := pr(101, 100, "/usr/bin/firecracker --api-sock /run/vm0/sock/live-1/api.sock", cwd("/var/lib/vm0/workspaces/live-1"))
	f := NewLeftovers(rules)
	f.Record(Build(snap(runner, liveVM), rules, nil))
	found := func(v *View, mod time.Time) Found {
		return Found{Globs: f.Globs(v), Paths: []proc.PathEntry{
			{Path: "/var/lib/vm0/workspaces/dead-1", Kind: proc.KindDir, ModTime: mod},
			{Path: "/var/lib/vm0/workspaces/dead-2", Kind: proc.KindDir, ModTime: mod},
		}}
	}
	leftovers := func(v *View) map[string]*Sandbox {
		out := map[string]*Sandbox{}
		for _, sb := range v.Sandboxes {
			if len(sb.Leftovers) > 0 {
				out[sb.ID] = sb
			}
		}
		if len(out) != 2 {
			t.Fatalf("leftover sandboxes %v, want dead-1 and dead-2", out)
		}
		return out
	}

	v := Build(snap(runner), rules, nil)
	first := leftovers(f.Apply(v, found(v, old)))
	again := leftovers(f.Apply(v, found(v, old)))
	fresh := NewLeftovers(rules)
	fresh.Record(Build(snap(runner, liveVM), rules, nil))
	for id, sb := range again {
		if sb != first[id] {
			t.Errorf("%s: a new sandbox for the same leftovers", id)
		}
		if want := leftovers(fresh.Apply(v, found(v, old)))[id]; !reflect.DeepEqual(sb, want) {
			t.Errorf("%s: handed out %+v, a fresh Apply makes %+v", id, *sb, *want)
		}
	}
	// The runner exits: the same paths are now removable.
	gone := Build(snap(), rules, nil)
	judged := leftovers(f.Apply(gone, found(gone, old)))
	for id, sb := range judged {
		if sb == again[id] || !sb.Leftovers[0].Removable() || again[id].Leftovers[0].Removable() {
			t.Errorf("%s: after the runner exited, removable %v (the same sandbox: %v)", id, sb.Leftovers[0].Removable(), sb == again[id])
		}
	}
	touched := leftovers(f.Apply(gone, found(gone, old.Add(time.Minute))))
	for id, sb := range touched {
		if sb == judged[id] {
			t.Errorf("%s: the same sandbox for a leftover that changed", id)
		}
	}
}

// BenchmarkLeftoverApply applies 500 leftover VMs of a runtime whose
// supervisor is known by an ancestor pattern, on a host of 10,000
// processes none of which is that supervisor: the live screen's case on a
// host where a runner died and left its workspaces.
func BenchmarkLeftoverApply(b *testing.B) {
	rules := Rules{vm0Rule}
	procs := []*proc.Process{pr(100, 1, "/usr/bin/runner start --config /etc/vm0.yaml"),
		pr(101, 100, "/usr/bin/firecracker --api-sock /run/vm0/sock/live-1/api.sock", cwd("/var/lib/vm0/workspaces/live-1"))}
	f := NewLeftovers(rules)
	f.Record(Build(snap(procs...), rules, nil))
	procs = procs[:0]
	for i := range 10_000 {
		procs = append(procs, pr(1000+i, 1, "/usr/bin/sleep "+strconv.Itoa(i)))
	}
	v := Build(snap(procs...), rules, nil)
	found := Found{Globs: f.Globs(v)}
	for i := range 500 {
		found.Paths = append(found.Paths, proc.PathEntry{Path: "/var/lib/vm0/workspaces/dead-" + strconv.Itoa(i), Kind: proc.KindDir})
	}
	b.ResetTimer()
	for b.Loop() {
		if lv := f.Apply(v, found); len(lv.Sandboxes) != len(v.Sandboxes)+500 {
			b.Fatalf("%d sandboxes", len(lv.Sandboxes))
		}
	}
}

// TestSupervisorAliveSeesNewSockets: the answer remembered for a snapshot
// must not outlive a socket recorded since.
func TestSupervisorAliveSeesNewSockets(t *testing.T) {
	r := &Rule{Name: "shim", Supervisor: Supervisor{SocketFlag: "-address"}}
	f := NewLeftovers(Rules{r})
	dead := &Sandbox{ID: "dead", Runtime: "shim", Rule: r, rules: []*Rule{r}}
	s := snap()
	s.Listeners = map[string]bool{"/run/shim.sock": true}
	if alive, note := f.SupervisorAlive(dead, &View{Snapshot: s}); alive {
		t.Fatalf("no socket recorded yet: alive (%s)", note)
	}
	live := &Sandbox{ID: "live", Runtime: "shim", Rule: r, rules: []*Rule{r}, socket: "/run/shim.sock",
		Members: []*Member{{Process: pr(10, 1, "/usr/bin/shim -address /run/shim.sock")}}}
	f.Record(&View{Sandboxes: []*Sandbox{live}})
	if alive, note := f.SupervisorAlive(dead, &View{Snapshot: s}); !alive {
		t.Errorf("after its socket was recorded: not alive (%s)", note)
	}
}

// TestLeftoverOfAKilledContainer: a Docker container killed while its
// runtime lives leaves its cgroup empty for a moment, until containerd
// notices and runc delete removes it: no leftover. Once no daemon of the
// runtime runs, the empty cgroup is a leftover, and it keeps the namespace
// its sandbox had (moby/), which the cgroup's path does not say.
func TestLeftoverOfAKilledContainer(t *testing.T) {
	id := "7cbf10573175a3cc05f5c8c1ba3ef45e1d0a3f9e1b8a7a2ad2d6aa61d1a8c301"
	for _, cg := range []string{"/docker/" + id, "/system.slice/docker-" + id + ".scope"} {
		t.Run(cg[:12], func(t *testing.T) { leftoverOfAKilledContainer(t, id, cg) })
	}
}

func leftoverOfAKilledContainer(t *testing.T, id, cg string) {
	rules := Presets()
	shim := pr(400, 1, "/usr/bin/containerd-shim-runc-v2 -namespace moby -id "+id+" -address /run/containerd/containerd.sock", cgroup("/system.slice/containerd.service"))
	app := pr(401, 400, "nginx", cgroup(cg), nspid(1))
	containerd := pr(300, 1, "/usr/bin/containerd", cgroup("/system.slice/containerd.service"))
	dockerd := pr(301, 1, "/usr/sbin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock", cgroup("/system.slice/docker.service"))
	found := Found{Cgroups: []proc.CgroupDir{{Path: cg, Dir: "/sys/fs/cgroup" + cg}}}
	for _, tc := range []struct {
		name    string
		daemons []*proc.Process
		want    string // the leftover sandbox's key, "" for none
	}{
		{"containerd and dockerd alive: the runtime removes it", []*proc.Process{containerd, dockerd}, ""},
		{"containerd alone alive", []*proc.Process{containerd}, ""},
		{"no daemon: a leftover, in moby", nil, "docker:moby/" + id},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewLeftovers(rules)
			live := snap(append([]*proc.Process{shim, app}, tc.daemons...)...)
			live.Listeners["/run/containerd/containerd.sock"] = len(tc.daemons) > 0
			f.Record(Build(live, rules, nil))
			after := snap(tc.daemons...)
			after.Listeners["/run/containerd/containerd.sock"] = len(tc.daemons) > 0
			v := Build(after, rules, nil)
			lv := f.Apply(v, found)
			var keys []string
			for _, sb := range lv.Sandboxes {
				if sb.HasBadge(BadgeLeftover) {
					keys = append(keys, sb.Key())
				}
			}
			want := []string{}
			if tc.want != "" {
				want = []string{tc.want}
			}
			if !slices.Equal(keys, want) && !(len(keys) == 0 && len(want) == 0) {
				t.Errorf("leftover sandboxes %q, want %q", keys, want)
			}
		})
	}
}
