package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sandtop/sandtop/model"
)

// systemRulesPath is the system-wide rules file; a variable so tests can
// point it into a temporary directory.
var systemRulesPath = "/etc/sandtop/rules.toml"

// defaultRulesPaths are the rules files sandtop looks for when --rules is
// not given, in order: $XDG_CONFIG_HOME/sandtop/rules.toml (~/.config when
// the variable is unset or, as the XDG Base Directory spec asks, relative),
// then /etc/sandtop/rules.toml.
func defaultRulesPaths() []string {
	var out []string
	dir := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) {
		dir = ""
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, ".config")
		}
	}
	if dir != "" {
		out = append(out, filepath.Join(dir, "sandtop", "rules.toml"))
	}
	return append(out, systemRulesPath)
}

// readRules reads the user's rules file: explicit when it is non-empty (it
// must exist and be readable), else the first default path that exists.
// It returns the path read, "" when there is none, and the file's bytes.
//
// A default path that cannot be read counts as absent, and skipped is
// called with it and why: a user who runs sandtop with another's HOME (su,
// setpriv, sudo without -H) has not asked for that file, and must not be
// stopped by it. A directory where a rules file should be is still an
// error: that is a mistake to fix, not a file to skip.
func readRules(explicit string, skipped func(path string, err error)) (string, []byte, error) {
	if explicit != "" {
		data, err := readRulesFile(explicit)
		if err != nil {
			return "", nil, err
		}
		return explicit, data, nil
	}
	for _, p := range defaultRulesPaths() {
		data, err := readRulesFile(p)
		switch {
		case err == nil:
			return p, data, nil
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			// Absent, or a parent is a file: no rules there.
		case errors.Is(err, fs.ErrPermission):
			skipped(p, err)
		default:
			return "", nil, err
		}
	}
	return "", nil, nil
}

// readRulesFile reads one rules file; a directory is an error that says so.
// It reads no more than one byte past model.MaxRulesFileBytes, which is
// enough for ParseRules to refuse a file beyond it.
func readRulesFile(path string) ([]byte, error) {
	data, err := readAtMost(path, model.MaxRulesFileBytes+1)
	if errors.Is(err, syscall.EISDIR) {
		err = fmt.Errorf("%s is a directory", path)
	}
	if err != nil {
		return nil, fmt.Errorf("rules file: %w", err)
	}
	return data, nil
}

// readAtMost reads the first max bytes of a file.
func readAtMost(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}

// loadRulesFile reads and parses one rules file.
func loadRulesFile(path string) (model.Rules, error) {
	data, err := readRulesFile(path)
	if err != nil {
		return nil, err
	}
	return model.ParseRules(data, path)
}
