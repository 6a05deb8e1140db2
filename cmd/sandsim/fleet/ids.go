package fleet

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// idGen makes sandbox IDs in each runtime's own shape, so that the presets
// in sandtop see what they would see on a real host.
type idGen struct{ r *rand.Rand }

func newIDGen(seed uint64) *idGen {
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &idGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// uuid returns a random (version 4) UUID, the shape of vm0 run IDs and
// Kubernetes pod UIDs.
func (g *idGen) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// hex returns n lowercase hex digits; 64 is the containerd/Docker ID shape.
func (g *idGen) hex(n int) string { return g.from("0123456789abcdef", n) }

// base62 returns n base62 characters; boxlite box IDs are 12 of them
// (src/boxlite/src/runtime/id.rs).
func (g *idGen) base62(n int) string {
	return g.from("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", n)
}

// from returns n characters drawn from digits.
func (g *idGen) from(digits string, n int) string {
	var sb strings.Builder
	for range n {
		sb.WriteByte(digits[g.r.IntN(len(digits))])
	}
	return sb.String()
}

// sandboxID returns a fresh ID in the runtime's shape.
func (g *idGen) sandboxID(r Runtime) string {
	switch r {
	case VM0, Jailer, Kubernetes:
		return g.uuid()
	case Boxlite:
		return g.base62(12)
	case Machine:
		// libvirt names its machines qemu-<domain id>-<domain name>.
		return fmt.Sprintf("qemu-%d-vm-%s", 1+g.r.IntN(99), g.hex(6))
	default:
		return g.hex(64)
	}
}

// systemdEscape escapes a name for use in a unit name the way
// systemd-escape(1) does: ASCII letters, digits, ':', '_' and '.' (except a
// leading one) stay, '/' becomes '-', everything else becomes \xNN. So a
// machine "qemu-1-vm" lives in machine-qemu\x2d1\x2dvm.scope.
func systemdEscape(name string) string {
	var sb strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '/':
			sb.WriteByte('-')
		case c == '.' && i == 0:
			fmt.Fprintf(&sb, `\x%02x`, c)
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == ':', c == '_', c == '.':
			sb.WriteByte(c)
		default:
			fmt.Fprintf(&sb, `\x%02x`, c)
		}
	}
	return sb.String()
}
