package model

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// A cleanup template names a path that a teardown removes, filled in from
// what the sandbox's processes showed (argv, cwd, cgroup): hostile input.
// So the template alone must make every expansion safe, and is checked
// when the rules are loaded: an absolute, clean path (never "/", no "."
// or ".." parts) whose placeholders are each a whole path component, with
// {id} exactly once below at least one literal directory. The one
// exception is a leading placeholder such as {base} in
// "{base}/workspaces/{id}", a captured absolute directory; a literal
// directory must still stand between it and {id}. At kill time each value
// is checked against its place (cleanupValueProblem).

// cleanupTemplateProblem says what is wrong with a cleanup template;
// captured says which placeholders the rule's matchers capture.
func cleanupTemplateProblem(t string, captured map[string]bool) error {
	names, err := placeholders(t)
	if err != nil {
		return err
	}
	for _, n := range names {
		if !captured[n] {
			return fmt.Errorf("uses {%s}, which no matcher captures", n)
		}
	}
	parts := strings.Split(t, "/")
	lead := parts[0] != ""
	switch {
	case lead && (placeholderName(parts[0]) == "" || parts[0] == "{id}"):
		return errors.New("must be an absolute path (or start with a captured directory such as {base})")
	case t == "/" || path.Clean(t) != t:
		return errors.New(`must be a clean path other than "/": no ".", ".." or empty parts, no trailing "/"`)
	case strings.Count(t, "{id}") != 1:
		return errors.New("must hold {id} exactly once")
	}
	literal := false
	for i, p := range parts {
		if i == 0 {
			continue
		}
		n := placeholderName(p)
		switch {
		case strings.ContainsAny(p, "{}") && n == "":
			return fmt.Errorf("%q: a placeholder must be a whole path component", p)
		case n == "id" && !literal:
			return errors.New("{id} needs a literal directory above it: it would name a directory of / or of a captured path")
		case n == "":
			literal = true
		}
	}
	return nil
}

// placeholderName is n when part is exactly "{n}", else "".
func placeholderName(part string) string {
	if len(part) > 2 && part[0] == '{' && part[len(part)-1] == '}' && !strings.ContainsAny(part[1:len(part)-1], "{}") {
		return part[1 : len(part)-1]
	}
	return ""
}

// ErrUnsafeCleanup marks a cleanup path refused for what its values would
// make of it (a climb, another directory), as against one that could not
// be filled in at all.
var ErrUnsafeCleanup = errors.New("refused")

// cleanupValueProblem says why a captured value cannot fill placeholder n
// of a path template at this place: a leading one must be an absolute,
// clean directory other than "/"; any other must be one path component,
// never "." or "..".
func cleanupValueProblem(n, v string, leading bool) error {
	switch {
	case v == "":
		return fmt.Errorf("{%s} has no value", n)
	case IsRefusedID(v):
		return fmt.Errorf("%w: {%s} was refused: it is longer than %d bytes", ErrUnsafeCleanup, n, MaxIDBytes)
	case leading && (!path.IsAbs(v) || path.Clean(v) != v || v == "/"):
		return fmt.Errorf("%w: {%s} is %q, not an absolute, clean directory other than /", ErrUnsafeCleanup, n, v)
	case !leading && (v == "." || v == ".." || strings.Contains(v, "/")):
		return fmt.Errorf("%w: {%s} is %q, which is not one path component: it would climb or reach into another directory", ErrUnsafeCleanup, n, v)
	case strings.IndexByte(v, 0) >= 0:
		return fmt.Errorf("%w: {%s} holds a NUL byte", ErrUnsafeCleanup, n)
	}
	return nil
}
