package query

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // substrings of the error
	}{
		{"foo:bar", []string{`unknown key "foo:"`, "id:, badge:, runtime:, pid:"}},
		{"badge:bogus", []string{`unknown badge "bogus"`, "orphan, zombie, paused"}},
		{"badge:", []string{"badge: needs a value", "orphan, zombie, paused"}},
		{"id:", []string{"id: needs a value"}},
		{"runtime:", []string{"runtime: needs a value"}},
		{"pid:abc", []string{"pid:abc is not a process ID"}},
		{"pid:-3", []string{"not a process ID"}},
		{"nginx !", []string{"! needs a term"}},
		{`"open`, []string{"quote is not closed"}},
		{`ab"c"`, []string{"quote must start a word"}},
		{`""`, []string{"matches everything"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) accepted it", tc.in)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse(%q) error %q does not say %q", tc.in, err, w)
				}
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []term
	}{
		{"", nil},
		{"  NGINX  ", []term{{value: "nginx"}}},
		{"badge:orphan runtime:VM0", []term{{key: Badge, value: "orphan"}, {key: Runtime, value: "vm0"}}},
		{"!badge:paused", []term{{key: Badge, value: "paused", not: true}}},
		{"pid:401 id:DEAD", []term{{key: PID, value: "401", pid: 401}, {key: ID, value: "dead"}}},
		{"unreadable !unreadable", []term{{key: Unreadable}, {key: Unreadable, not: true}}},
		{`"foo:bar" !"a b"`, []term{{value: "foo:bar"}, {value: "a b", not: true}}},
		{"/run/vm0/sock:x 10.0.0.1:80", []term{{value: "/run/vm0/sock:x"}, {value: "10.0.0.1:80"}}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			q, err := Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(q.terms, tc.want) {
				t.Errorf("Parse(%q) = %+v, want %+v", tc.in, q.terms, tc.want)
			}
			if q.Empty() != (len(tc.want) == 0) {
				t.Errorf("Empty() = %v", q.Empty())
			}
		})
	}
}

// TestEveryBadgeParses ties the language to the model's one list of
// badges: a badge added there is a valid value here.
func TestEveryBadgeParses(t *testing.T) {
	for _, b := range model.Badges {
		q, err := Parse("badge:" + string(b))
		if err != nil {
			t.Fatalf("badge %s: %v", b, err)
		}
		sb := &model.Sandbox{ID: "x", Badges: []model.Badge{b}}
		if !q.Sandbox(sb) || q.Sandbox(&model.Sandbox{ID: "x"}) {
			t.Errorf("badge:%s does not select exactly the sandboxes carrying it", b)
		}
	}
}

func TestRestricts(t *testing.T) {
	for _, tc := range []struct {
		in    string
		badge bool
	}{
		{"", false},
		{"nginx", false},
		{"!badge:paused", false},
		{"badge:orphan", true},
		{"runtime:docker !badge:paused badge:zombie", true},
		{`"badge:orphan"`, false}, // a quoted word is text, not a key
	} {
		q, err := Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Restricts(Badge); got != tc.badge {
			t.Errorf("Parse(%q).Restricts(badge) = %v, want %v", tc.in, got, tc.badge)
		}
	}
}

// fleet is a small hand-made view: what the language sees of sandboxes.
func fleet() ([]*model.Sandbox, []*proc.Process) {
	member := func(pid int, comm string, argv ...string) *model.Member {
		return &model.Member{Process: &proc.Process{PID: pid, Comm: comm, Argv: argv}}
	}
	partial := member(401, "qemu", "qemu-system-x86_64")
	partial.Partial = true
	sbs := []*model.Sandbox{
		{ID: "0f806d14-c41a", Runtime: "vm0", Badges: []model.Badge{model.BadgeZombie},
			Members: []*model.Member{member(200, "firecracker", "firecracker", "--config-file", "/w/0f806d14/config.json"), member(201, "sh")}},
		{ID: "7d1e2c3a", Runtime: "vm0", Badges: []model.Badge{model.BadgeOrphan},
			Members: []*model.Member{member(300, "vsock-proxy", "vsock-proxy", "--port", "9")}},
		{ID: "c0ffee00", Namespace: "k8s.io", Aliases: []string{"pod-1234"}, Runtime: "containerd",
			Members: []*model.Member{member(350, "containerd-shim", "containerd-shim", "-id", "c0ffee00"), member(351, "nginx", "nginx: master")}},
		{ID: "deadbeef", Runtime: "cube", Badges: []model.Badge{model.BadgeOrphan, model.BadgePaused},
			Members: []*model.Member{partial}},
	}
	host := []*proc.Process{
		{PID: 1, Comm: "init", Argv: []string{"/sbin/init"}},
		{PID: 502, Comm: "vim", Argv: []string{"vim", "notes"}},
		{PID: 503, Comm: "cat", Partial: true},
	}
	return sbs, host
}

func TestMatch(t *testing.T) {
	sbs, host := fleet()
	for _, tc := range []struct {
		q         string
		sandboxes []string
		host      []int
	}{
		{"", []string{"0f806d14-c41a", "7d1e2c3a", "c0ffee00", "deadbeef"}, []int{1, 502, 503}},
		{"badge:orphan", []string{"7d1e2c3a", "deadbeef"}, nil},
		{"!badge:orphan", []string{"0f806d14-c41a", "c0ffee00"}, []int{1, 502, 503}},
		{"runtime:VM0", []string{"0f806d14-c41a", "7d1e2c3a"}, nil},
		{"runtime:v", nil, nil}, // runtime: is the whole name
		{"containerd", []string{"c0ffee00"}, nil},
		{"NGINX", []string{"c0ffee00"}, nil},
		{"vsock-proxy --port", []string{"7d1e2c3a"}, nil},
		{"id:c0ff", []string{"c0ffee00"}, nil},
		{"id:ffee", nil, nil}, // a prefix, not a substring
		{"id:pod-12", []string{"c0ffee00"}, nil},
		{"id:k8s.io/c0", []string{"c0ffee00"}, nil},
		{"id:containerd:k8s.io/c0", []string{"c0ffee00"}, nil},
		{"id:cube:dead", []string{"deadbeef"}, nil},
		// A runtime or a namespace names no sandbox, however few it has.
		{"id:vm0", nil, nil},
		{"id:cube", nil, nil},
		{"id:cube:", nil, nil},
		{"id:k8s", nil, nil},
		{"id:k8s.io/", nil, nil},
		{"ffee", []string{"c0ffee00"}, nil}, // a plain word is a substring
		{"pid:401", []string{"deadbeef"}, nil},
		{"pid:502", nil, []int{502}},
		{"unreadable", []string{"deadbeef"}, []int{503}},
		{"!unreadable badge:orphan", []string{"7d1e2c3a"}, nil},
		{"vim", nil, []int{502}},
		{`"nginx: master"`, []string{"c0ffee00"}, nil},
		{"/w/0f806d14/config.json", []string{"0f806d14-c41a"}, nil},
		{"nothing-matches-this", nil, nil},
	} {
		t.Run(tc.q, func(t *testing.T) {
			q, err := Parse(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, sb := range sbs {
				if q.Sandbox(sb) {
					got = append(got, sb.ID)
				}
			}
			var gotHost []int
			for _, p := range host {
				if q.Process(p) {
					gotHost = append(gotHost, p.PID)
				}
			}
			if !slices.Equal(got, tc.sandboxes) {
				t.Errorf("sandboxes %v, want %v", got, tc.sandboxes)
			}
			if !slices.Equal(gotHost, tc.host) {
				t.Errorf("host processes %v, want %v", gotHost, tc.host)
			}
		})
	}
}

func TestSyntaxNamesEveryKey(t *testing.T) {
	var all strings.Builder
	for _, l := range Syntax {
		all.WriteString(l[0] + " " + l[1] + "\n")
	}
	for _, k := range append(slices.Clone(keys), Unreadable, "!") {
		if !strings.Contains(all.String(), k) {
			t.Errorf("Syntax does not show %q", k)
		}
	}
	for _, b := range model.Badges {
		if !strings.Contains(all.String(), string(b)) {
			t.Errorf("Syntax does not name badge %q", b)
		}
	}
}

// TestFilterWordsAnOperatorTypes: an unknown runtime names the runtimes
// there are, a quoted phrase matches across argv, and !! is an error, not
// a filter that keeps everything.
func TestFilterWordsAnOperatorTypes(t *testing.T) {
	q, err := Parse("runtime:dockr")
	if err != nil {
		t.Fatal(err)
	}
	err = q.CheckRuntimes([]string{"containerd", "docker"}, []string{"docker", "firecracker"})
	if err == nil || !strings.Contains(err.Error(), "containerd, docker") || !strings.Contains(err.Error(), "firecracker") {
		t.Errorf("runtime:dockr: %v", err)
	}
	q, _ = Parse("runtime:DOCKER")
	if err := q.CheckRuntimes([]string{"docker"}, nil); err != nil {
		t.Errorf("runtime:DOCKER on a docker host: %v", err)
	}
	q, err = Parse(`"nginx -g"`)
	if err != nil {
		t.Fatal(err)
	}
	nginx := &proc.Process{Comm: "nginx", Argv: []string{"nginx", "-g", "daemon off;"}}
	if !q.Process(nginx) {
		t.Error(`"nginx -g" does not match nginx -g daemon off;`)
	}
	if q, _ := Parse(`"nginx -x"`); q.Process(nginx) {
		t.Error(`"nginx -x" matches nginx -g daemon off;`)
	}
	if _, err := Parse("!!badge:paused"); err == nil || !strings.Contains(err.Error(), "!!") {
		t.Errorf("!!badge:paused: %v", err)
	}
}
