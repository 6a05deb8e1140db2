package fleet

import (
	"strings"
	"testing"
)

func TestSpecValidate(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		want string // substring of the error; "" means valid
	}{
		{"demo", Demo(), ""},
		{"seeds", Seeds(), ""},
		{"bulk", Bulk(25), ""},
		{"unknown runtime", Spec{Sandboxes: []SandboxSpec{{Runtime: "lxc"}}}, `unknown runtime "lxc"`},
		{"duplicate name", Spec{Sandboxes: []SandboxSpec{{Name: "a", Runtime: VM0}, {Name: "a", Runtime: Cube}}}, "duplicate name"},
		{"default names do not clash", Spec{Sandboxes: []SandboxSpec{{Runtime: VM0}, {Runtime: VM0}}}, ""},
		{"duplicate id", Spec{Sandboxes: []SandboxSpec{{Runtime: Docker, ID: "x"}, {Runtime: Kata, ID: "x"}}}, `duplicate id "x"`},
		{"name with a slash", Spec{Sandboxes: []SandboxSpec{{Name: "a/b", Runtime: VM0}}}, "name must match"},
		{"unknown pause", Spec{Sandboxes: []SandboxSpec{{Runtime: Cube, Pause: "nap"}}}, `unknown pause "nap"`},
		{"negative zombies", Spec{Sandboxes: []SandboxSpec{{Runtime: Cube, Zombies: -1}}}, "zombies = -1"},
		{"too many leaves", Spec{Sandboxes: []SandboxSpec{{Runtime: Docker, Leaves: maxBehaviour + 1}}}, "leaves = 1001"},
		{"bystander without argv", Spec{Bystanders: []BystanderSpec{{Role: "b"}}}, "empty argv"},
		{"bystander names no sandbox", Spec{Bystanders: []BystanderSpec{{Role: "b", Argv: []string{"x"}, SiblingOf: "nope"}}}, `no sandbox named "nope"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.spec.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestScenario(t *testing.T) {
	cases := []struct {
		name      string
		sandboxes int
		leaves    []int // per sandbox, when checked
		wantErr   bool
	}{
		{name: "demo", sandboxes: len(Demo().Sandboxes)},
		{name: "seeds", sandboxes: 6},
		{name: "bulk:25", sandboxes: 3, leaves: []int{9, 9, 4}},
		{name: "bulk:1", sandboxes: 1, leaves: []int{0}},
		{name: "bulk:1000", sandboxes: 100},
		{name: "bulk:0", wantErr: true},
		{name: "bulk:x", wantErr: true},
		{name: "bulk-orphans:1000", sandboxes: 100},
		{name: "bulk-orphans:0", wantErr: true},
		{name: "nope", wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec, err := Scenario(c.name)
			if (err != nil) != c.wantErr {
				t.Fatalf("Scenario(%q) error = %v, want error %v", c.name, err, c.wantErr)
			}
			if c.wantErr {
				return
			}
			if spec.Scenario != c.name || len(spec.Sandboxes) != c.sandboxes {
				t.Errorf("Scenario(%q) = %q with %d sandboxes, want %d", c.name, spec.Scenario, len(spec.Sandboxes), c.sandboxes)
			}
			for i, sb := range spec.Sandboxes {
				if !strings.HasPrefix(c.name, "bulk") {
					break
				}
				if orphan := strings.HasPrefix(c.name, "bulk-orphans:"); sb.Orphan != orphan {
					t.Errorf("sandbox %d: orphan %v, want %v", i, sb.Orphan, orphan)
				}
			}
			for i, n := range c.leaves {
				if got := spec.Sandboxes[i].Leaves; got != n {
					t.Errorf("sandbox %d has %d leaves, want %d", i, got, n)
				}
			}
		})
	}
}

// TestDemoCoversEveryCase keeps the demo honest: every runtime and every
// behaviour appears at least once.
func TestDemoCoversEveryCase(t *testing.T) {
	spec := Demo()
	seen := map[string]bool{}
	for _, s := range spec.Sandboxes {
		seen[string(s.Runtime)] = true
		seen["pause:"+string(s.Pause)] = true
		for flag, on := range map[string]bool{
			"orphan": s.Orphan, "zombies": s.Zombies > 0, "escape": s.Escape,
			"ignore-term": s.IgnoreTERM, "forker": s.Forker, "detached": s.Detached,
		} {
			seen[flag] = seen[flag] || on
		}
	}
	want := []string{"orphan", "zombies", "escape", "ignore-term", "forker", "detached",
		"pause:" + string(PauseFreeze), "pause:" + string(PauseFreezerV1), "pause:" + string(PauseStop)}
	for _, r := range Runtimes {
		want = append(want, string(r))
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("demo lacks %s", w)
		}
	}
	if len(spec.Bystanders) < 2 {
		t.Errorf("demo has %d bystanders, want one per kind", len(spec.Bystanders))
	}
}
