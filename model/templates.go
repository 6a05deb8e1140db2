package model

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Expand substitutes every "{name}" in template with Vars[name]. A
// placeholder with no value is left as it is, so a half-expanded path stays
// recognisable; use CleanupPaths to get only paths safe to remove.
func (m Match) Expand(template string) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(template, '{')
		if open < 0 {
			break
		}
		end := strings.IndexByte(template[open:], '}')
		if end < 0 {
			break
		}
		name := template[open+1 : open+end]
		b.WriteString(template[:open])
		if v, ok := m.Vars[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(template[open : open+end+1])
		}
		template = template[open+end+1:]
	}
	b.WriteString(template)
	return b.String()
}

// CleanupPaths expands the rule's cleanup templates into the paths that are
// safe to remove. A path is refused, and named in the returned error, when a
// placeholder has no value or an empty one, when the ID is "." or ".." or
// holds a "/", or when the result is not an absolute, clean path other than
// "/" (no "..", "." or "//" parts): the values come from argv and cwd, which
// the sandboxed side may control, and must never steer a removal outside
// the runtime's own directories.
func (m Match) CleanupPaths() ([]string, error) {
	if m.Rule == nil {
		return nil, nil
	}
	var (
		paths []string
		errs  []error
	)
	for _, t := range m.Rule.Cleanup {
		if err := m.checkCleanupVars(t); err != nil {
			errs = append(errs, fmt.Errorf("cleanup %q: %w", t, err))
			continue
		}
		p := m.Expand(t)
		if !SafeCleanupPath(p, m.ID) {
			errs = append(errs, fmt.Errorf("cleanup %q: %w: %q is not an absolute, clean path naming the sandbox ID", t, ErrUnsafeCleanup, p))
			continue
		}
		paths = append(paths, p)
	}
	return paths, errors.Join(errs...)
}

// ReconcileArgv expands the rule's reconcile command with the captures. It
// fails when a placeholder has no value: a command with a hole in it is
// never run.
func (m Match) ReconcileArgv() ([]string, error) {
	if m.Rule == nil {
		return nil, nil
	}
	return m.argv("reconcile", m.Rule.Reconcile)
}

// InspectArgv expands the rule's inspect command like ReconcileArgv.
func (m Match) InspectArgv() ([]string, error) {
	if m.Rule == nil {
		return nil, nil
	}
	return m.argv("inspect", m.Rule.Inspect)
}

func (m Match) argv(key string, templates []string) ([]string, error) {
	if len(templates) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(templates))
	for _, t := range templates {
		if err := m.checkVars(t); err != nil {
			return nil, fmt.Errorf("%s %q: %w", key, t, err)
		}
		// A capture comes from the process's argv or cgroup path: one
		// that starts an argument with "-" would be read by the runtime
		// as an option (podman rm --force --all), not as the value the
		// template puts there.
		arg := m.Expand(t)
		if strings.HasPrefix(arg, "-") && !strings.HasPrefix(t, "-") {
			return nil, fmt.Errorf("%s %q: %w: %s starts with \"-\", which the runtime would read as an option", key, t, ErrOptionLike, Printable(arg))
		}
		out = append(out, arg)
	}
	return out, nil
}

// ErrOptionLike is a runtime command whose argument, filled in from a
// capture, would read as an option.
var ErrOptionLike = errors.New("a captured value reads as an option")

func (m Match) checkVars(template string) error {
	names, err := placeholders(template)
	if err != nil {
		return err
	}
	for _, n := range names {
		v, ok := m.Vars[n]
		switch {
		case !ok || v == "":
			return fmt.Errorf("{%s} has no value", n)
		case IsRefusedID(v):
			return fmt.Errorf("{%s} was refused: it is longer than %d bytes", n, MaxIDBytes)
		case n == "id" && (v == "." || v == ".." || strings.Contains(v, "/")):
			return fmt.Errorf("ID %q cannot name a directory", v)
		}
	}
	return nil
}

// placeholders lists the names of the "{name}" placeholders in template,
// rejecting unbalanced braces and names that no regex group could have.
func placeholders(template string) ([]string, error) {
	var names []string
	for rest := template; rest != ""; {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			break
		}
		if rest[open] == '}' {
			return nil, errors.New(`"}" without "{"`)
		}
		end := strings.IndexAny(rest[open+1:], "{}")
		if end < 0 || rest[open+1+end] == '{' {
			return nil, errors.New(`"{" without "}"`)
		}
		name := rest[open+1 : open+1+end]
		if !groupName.MatchString(name) {
			return nil, fmt.Errorf("{%s} is not a capture group name", name)
		}
		names = append(names, name)
		rest = rest[open+1+end+1:]
	}
	return names, nil
}

// groupName is what RE2 accepts as a capture group name.
var groupName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// SafeCleanupPath reports whether path may be removed as cleanup of the
// sandbox id: it must be absolute and clean (no "..", which a captured ID
// could smuggle in), hold no unexpanded placeholder, and name the sandbox
// ID as one of its components, so that a rule can never remove a shared
// directory such as /run or a user's home.
func SafeCleanupPath(path, id string) bool {
	if id == "" || !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.ContainsAny(path, "{}") {
		return false
	}
	return slices.Contains(strings.Split(path, "/"), id)
}
