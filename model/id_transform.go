package model

import (
	"strconv"
	"strings"
)

// IDTransform rewrites a captured ID into the spelling its runtime uses.
type IDTransform string

// The ID transforms a rule may name.
const (
	IDTransformNone IDTransform = ""
	// UnderscoreToDash undoes the kubelet's systemd cgroup driver, which
	// writes a pod UID's "-" as "_" because "-" separates slice levels in
	// systemd unit names (kubepods-burstable-pod1234_abcd.slice).
	UnderscoreToDash IDTransform = "underscore-to-dash"
	// SystemdUnescape decodes systemd's unit-name escaping ("\x2d" is "-"),
	// as in machine-fedora\x2d38.scope (systemd.unit(5), "String Escaping").
	SystemdUnescape IDTransform = "systemd-unescape"
)

// Valid reports whether t is a transform Apply knows.
func (t IDTransform) Valid() bool {
	return t == IDTransformNone || t == UnderscoreToDash || t == SystemdUnescape
}

// Apply returns s rewritten by the transform.
func (t IDTransform) Apply(s string) string {
	switch t {
	case UnderscoreToDash:
		return strings.ReplaceAll(s, "_", "-")
	case SystemdUnescape:
		return unescapeHex(s)
	}
	return s
}

// unescapeHex turns every "\xNN" into the byte it names and leaves
// anything else, including a malformed escape, as it is: systemd's escapes
// in a unit's name, and the kernel log's of the unprintable bytes (and
// the backslash) in what it quotes, such as an OOM victim's comm.
func unescapeHex(s string) string {
	i := strings.Index(s, `\x`)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		if n, err := strconv.ParseUint(s[i+2:min(i+4, len(s))], 16, 8); err == nil && i+4 <= len(s) {
			b.WriteByte(byte(n))
			s = s[i+4:]
		} else {
			b.WriteString(`\x`)
			s = s[i+2:]
		}
		i = strings.Index(s, `\x`)
	}
	b.WriteString(s)
	return b.String()
}
