package model

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/sandtop/sandtop/model/words"
	"github.com/sandtop/sandtop/proc"
)

// A leftovers template may start with a kind: "netns:vm0-{id}",
// "link:tap{id}", "mount:{base}/workspaces/{id}/rootfs",
// "cgroup:/firecracker/{id}", "socket:…", "file:…", "dir:…". A bare path
// is a file, directory or socket. Paths and names are checked apart: a
// path template names {id} as one whole component below a literal
// directory; a name template (netns, link) holds {id} once beside a
// literal part, never a "/", and fits the kernel's limit on the name.

// leftoverKinds are the kinds a template may name, in the order a
// teardown removes them: a device before its namespace, a mount before
// the directory it is mounted on, a cgroup last.
var leftoverKinds = []proc.PathKind{proc.KindLink, proc.KindMount, proc.KindNetns, proc.KindSocket, proc.KindFile, proc.KindDir, proc.KindCgroup}

// nameLimits are the longest names the kernel takes: a netns is a file
// under /run/netns (NAME_MAX), a device name fits IFNAMSIZ with its NUL.
var nameLimits = map[proc.PathKind]int{proc.KindNetns: 255, proc.KindLink: 15}

// SplitLeftoverTemplate returns a template's kind ("" for a bare path)
// and the template without its kind.
func SplitLeftoverTemplate(t string) (proc.PathKind, string) {
	k, rest, ok := strings.Cut(t, ":")
	if ok && slices.Contains(leftoverKinds, proc.PathKind(k)) {
		return proc.PathKind(k), rest
	}
	return "", t
}

// isNameKind reports whether a kind's templates are names, not paths.
func isNameKind(k proc.PathKind) bool { _, ok := nameLimits[k]; return ok }

// leftoverTemplateProblem says what is wrong with a leftovers template;
// captured says which placeholders the rule's matchers capture.
func leftoverTemplateProblem(t string, captured map[string]bool) error {
	kind, body := SplitLeftoverTemplate(t)
	names, err := placeholders(body)
	if err != nil {
		return err
	}
	if isNameKind(kind) {
		return nameTemplateProblem(kind, body, names)
	}
	for _, n := range names {
		switch {
		case n == "id":
		case kind == proc.KindCgroup:
			return fmt.Errorf("{%s}: a cgroup template is a path from each hierarchy's root; only {id} is filled in", n)
		case !captured[n]:
			return fmt.Errorf("uses {%s}, which no matcher captures", n)
		}
	}
	parts := strings.Split(body, "/")
	i := slices.Index(parts, "{id}")
	switch {
	case !strings.HasPrefix(body, "/") && !(kind != proc.KindCgroup && strings.HasPrefix(body, "{") && !strings.HasPrefix(body, "{id}")) || path.Clean(body) != body:
		return errors.New("must be an absolute, clean path")
	case strings.Count(body, "{id}") != 1 || i < 0:
		return errors.New("must hold {id} exactly once, as a whole path component")
	case i < 2:
		return errors.New("{id} right under / would list the root directory")
	case strings.ContainsAny(strings.Join(parts[:i], "/"), "*?[\\"):
		return errors.New("the directories above {id} must be literal")
	}
	return nil
}

// nameTemplateProblem checks a netns or link name template.
func nameTemplateProblem(kind proc.PathKind, body string, names []string) error {
	fixed := strings.Replace(body, "{id}", "", 1)
	switch {
	case len(names) != 1 || names[0] != "id":
		return fmt.Errorf("a %s name holds {id} exactly once and no other placeholder", kind)
	case fixed == "":
		return fmt.Errorf("a %s name needs a literal part beside {id}: {id} alone would name every %s", kind, kind)
	case strings.ContainsAny(fixed, "/*?[\\ \t\n\x00:"):
		return fmt.Errorf("a %s name is one literal name: no '/', blank, ':' or glob character", kind)
	case len(fixed) >= nameLimits[kind]:
		return fmt.Errorf("the literal part is %d bytes; a %s name is at most %d", len(fixed), kind, nameLimits[kind])
	}
	return nil
}

// nameID returns the ID a name template's prefix and suffix leave of
// name, or "".
func nameID(prefix, suffix, name string) string {
	if len(name) <= len(prefix)+len(suffix) || !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
		return ""
	}
	return name[len(prefix) : len(name)-len(suffix)]
}

// kindRank orders leftovers as leftoverKinds does.
func kindRank(k proc.PathKind) int {
	if i := slices.Index(leftoverKinds, k); i >= 0 {
		return i
	}
	return len(leftoverKinds)
}

// LeftoverSummary counts a sandbox's leftovers by kind, in the order a
// teardown takes them: "5 leftovers: 1 link, 2 mounts, 1 netns, 1 dir"
// ("" when it has none).
func LeftoverSummary(ls []Leftover) string {
	if len(ls) == 0 {
		return ""
	}
	n := map[proc.PathKind]int{}
	for _, l := range ls {
		n[l.Kind]++
	}
	var parts []string
	for _, k := range leftoverKinds {
		if n[k] > 0 {
			parts = append(parts, words.Count(n[k], string(k), kindPlural(k)))
		}
	}
	return words.Count(len(ls), "leftover", "leftovers") + ": " + strings.Join(parts, ", ")
}

func kindPlural(k proc.PathKind) string {
	if k == proc.KindNetns {
		return "netns"
	}
	return string(k) + "s"
}
