package model

import (
	"testing"

	"github.com/sandtop/sandtop/proc"
)

// vmProcess is a Firecracker VM the presets claim by its --id.
func vmProcess(pid int, id string) *proc.Process {
	return &proc.Process{
		PID: pid, PPID: 1, Comm: "firecracker", Exe: "/usr/bin/firecracker",
		Argv:   []string{"/usr/bin/firecracker", "--id", id, "--api-sock", "/run/fc/" + id + ".sock"},
		Cgroup: "/firecracker/" + id,
	}
}

func TestAlikeEqual(t *testing.T) {
	base := vmProcess(10, "vm-one")
	same := vmProcess(11, "vm-one")
	if a, b := matchInputsOf(base), matchInputsOf(same); !a.equal(&b) || a.hash() != b.hash() {
		t.Fatalf("two workers with the same inputs are not alike: %+v, %+v", a, b)
	}
	for name, change := range map[string]func(p *proc.Process){
		"comm":    func(p *proc.Process) { p.Comm = "jailer" },
		"exe":     func(p *proc.Process) { p.Exe = "/opt/firecracker" },
		"cwd":     func(p *proc.Process) { p.Cwd = "/srv" },
		"cgroup":  func(p *proc.Process) { p.Cgroup = "/other" },
		"freezer": func(p *proc.Process) { p.Freezer = "/f" },
		"nspid":   func(p *proc.Process) { p.NSpid = []int{11, 1} },
		"kernel":  func(p *proc.Process) { p.Kernel = true },
		// Arguments are told apart, not only their concatenation.
		"argv split": func(p *proc.Process) {
			p.Argv = []string{"/usr/bin/firecracker", "--id vm-one", "--api-sock", "/run/fc/vm-one.sock"}
		},
		"argv longer": func(p *proc.Process) { p.Argv = append(p.Argv, "") },
	} {
		other := vmProcess(11, "vm-one")
		change(other)
		if a, b := matchInputsOf(base), matchInputsOf(other); a.equal(&b) {
			t.Errorf("%s: processes that differ are alike", name)
		}
	}
}

// The memos key by a hash of the inputs; a hash that another set holds
// must get this process's own answer, never the other set's. A collision of
// a 64-bit hash cannot be made on purpose, so the tests plant one.
func TestAlikeMemoTellsCollisionsApart(t *testing.T) {
	rules := Presets()
	p, other := vmProcess(10, "vm-one"), vmProcess(20, "vm-two")
	want, ok := rules.Match(p)
	if !ok || want.ID != "vm-one" {
		t.Fatalf("presets match the VM as %+v, %v; the test needs a match", want, ok)
	}

	memo := &alikeMemo{}
	if got := memo.match(rules, p); got == nil || got.ID != "vm-one" {
		t.Fatalf("first match = %+v", got)
	}
	// A repeat is answered from the memo: a planted answer shows it is.
	a := matchInputsOf(p)
	slot := &memo.slots[a.hash()%alikeMemoSlots]
	slot.m = &Match{ID: "from-memo"}
	if got := memo.match(rules, vmProcess(11, "vm-one")); got == nil || got.ID != "from-memo" {
		t.Fatalf("an alike process was matched again instead of looked up: %+v", got)
	}
	// The same slot and hash held by a process that is not alike is a
	// collision.
	slot.p, slot.m = other, &Match{ID: "vm-two"}
	if got := memo.match(rules, p); got == nil || got.ID != "vm-one" {
		t.Fatalf("a collision answered with the other set's match: %+v", got)
	}
}

func TestNeedsMemoTellsCollisionsApart(t *testing.T) {
	// A rule that needs the cwd of a process it claims by comm.
	rules, err := ParseRules([]byte(`
[[rule]]
name = "box"
comm = "^boxd$"
cwd = "^/srv/boxes/(?P<id>[a-z0-9-]+)$"
`), "box.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := &proc.Process{PID: 10, Comm: "boxd", Argv: []string{"boxd"}, Unread: proc.FieldCwd | proc.FieldExe}
	want := rules.Needs(p)
	if want&proc.FieldCwd == 0 {
		t.Fatalf("Needs = %v; the test needs a rule that reads the cwd", want)
	}
	m := &needsMemo{}
	a := matchInputsOf(p)
	slot := &m.slots[a.hash()%needsMemoSlots]
	if got := m.needs(rules, p); got != want || !slot.used {
		t.Fatalf("first question: needs %v (want %v), remembered: %v", got, want, slot.used)
	}
	// A repeat is answered from the memo: a planted answer shows it is.
	slot.need = proc.FieldStatus
	if got := m.needs(rules, &proc.Process{PID: 11, Comm: "boxd", Argv: []string{"boxd"}, Unread: p.Unread}); got != proc.FieldStatus {
		t.Fatalf("an alike process was asked about again instead of looked up: %v", got)
	}
	// The same slot and hash held by a set that is not alike is a collision.
	other := &proc.Process{PID: 20, Comm: "sshd", Argv: []string{"sshd"}, Unread: p.Unread}
	slot.a, slot.need = matchInputsOf(other), 0
	if got := m.needs(rules, p); got != want {
		t.Fatalf("a collision answered with the other set's needs: %v, want %v", got, want)
	}
	// So are the same set with other fields unread.
	slot.a, slot.unread, slot.need = a, proc.FieldExe, 0
	if got := m.needs(rules, p); got != want {
		t.Fatalf("a set with other unread fields answered: %v, want %v", got, want)
	}
}
