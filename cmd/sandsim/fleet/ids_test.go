package fleet

import (
	"regexp"
	"testing"
)

func TestSandboxIDShapes(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	want := map[Runtime]*regexp.Regexp{
		VM0:        uuid,
		Jailer:     regexp.MustCompile(`^[[:alnum:]-]{1,64}$`), // src/utils/src/validators.rs
		Kubernetes: uuid,
		Boxlite:    regexp.MustCompile(`^[0-9A-Za-z]{12}$`),
		Machine:    regexp.MustCompile(`^qemu-[0-9]+-vm-[0-9a-f]{6}$`),
		Cube:       hex64,
		Containerd: hex64,
		Docker:     hex64,
		Kata:       hex64,
		GVisor:     hex64,
		Cloudflare: hex64,
		Podman:     hex64,
	}
	g := newIDGen(0)
	for _, r := range Runtimes {
		t.Run(string(r), func(t *testing.T) {
			re := want[r]
			if re == nil {
				t.Fatalf("no expected shape for %s", r)
			}
			if id := g.sandboxID(r); !re.MatchString(id) {
				t.Errorf("sandboxID(%s) = %q, want %v", r, id, re)
			}
		})
	}
}

func TestIDGenSeed(t *testing.T) {
	a, b := newIDGen(42), newIDGen(42)
	for range 3 {
		if x, y := a.uuid(), b.uuid(); x != y {
			t.Fatalf("same seed, different IDs: %s, %s", x, y)
		}
	}
	if x, y := newIDGen(0).hex(64), newIDGen(0).hex(64); x == y {
		t.Errorf("two random generators agreed: %s", x)
	}
}

func TestSystemdEscape(t *testing.T) {
	cases := []struct{ in, want string }{
		{"qemu-1-vm", `qemu\x2d1\x2dvm`},
		{"fedora.36", "fedora.36"},
		{".hidden", `\x2ehidden`},
		{"a/b", "a-b"},
		{"a b:c_d", `a\x20b:c_d`},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			if got := systemdEscape(c.in); got != c.want {
				t.Errorf("systemdEscape(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestCommOf(t *testing.T) {
	cases := []struct{ path, want string }{
		{"/usr/bin/containerd-shim-runc-v2", "containerd-shim"},
		{"/opt/kata/bin/qemu-system-x86_64", "qemu-system-x86"},
		{"firecracker", "firecracker"},
		{"/firecracker", "firecracker"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			if got := commOf(c.path); got != c.want {
				t.Errorf("commOf(%q) = %q, want %q", c.path, got, c.want)
			}
		})
	}
}
