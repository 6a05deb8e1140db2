package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/proc/proctest"
)

func TestReadRules(t *testing.T) {
	write := func(t *testing.T, path string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("# rules\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	type env struct{ xdg, home, system string }
	tests := []struct {
		name     string
		setup    func(t *testing.T, e env) (explicit, want string)
		wantErr  error
		anyError bool
	}{
		{"explicit wins", func(t *testing.T, e env) (string, string) {
			write(t, filepath.Join(e.xdg, "sandtop", "rules.toml"))
			p := write(t, filepath.Join(t.TempDir(), "mine.toml"))
			return p, p
		}, nil, false},
		{"explicit must exist", func(t *testing.T, e env) (string, string) {
			write(t, filepath.Join(e.xdg, "sandtop", "rules.toml"))
			return filepath.Join(e.home, "nope.toml"), ""
		}, fs.ErrNotExist, false},
		{"xdg config home", func(t *testing.T, e env) (string, string) {
			write(t, e.system)
			return "", write(t, filepath.Join(e.xdg, "sandtop", "rules.toml"))
		}, nil, false},
		{"xdg set hides ~/.config", func(t *testing.T, e env) (string, string) {
			write(t, filepath.Join(e.home, ".config", "sandtop", "rules.toml"))
			return "", write(t, e.system)
		}, nil, false},
		{"home config when xdg unset", func(t *testing.T, e env) (string, string) {
			t.Setenv("XDG_CONFIG_HOME", "")
			write(t, e.system)
			return "", write(t, filepath.Join(e.home, ".config", "sandtop", "rules.toml"))
		}, nil, false},
		{"relative xdg is ignored", func(t *testing.T, e env) (string, string) {
			t.Setenv("XDG_CONFIG_HOME", "relative/dir")
			return "", write(t, filepath.Join(e.home, ".config", "sandtop", "rules.toml"))
		}, nil, false},
		{"system file", func(t *testing.T, e env) (string, string) {
			return "", write(t, e.system)
		}, nil, false},
		{"none", func(t *testing.T, e env) (string, string) {
			return "", ""
		}, nil, false},
		{"a file where a directory should be is no rules", func(t *testing.T, e env) (string, string) {
			write(t, filepath.Join(e.xdg, "sandtop"))
			return "", write(t, e.system)
		}, nil, false},
		{"directory in the way", func(t *testing.T, e env) (string, string) {
			if err := os.MkdirAll(filepath.Join(e.xdg, "sandtop", "rules.toml"), 0o755); err != nil {
				t.Fatal(err)
			}
			return "", ""
		}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := env{xdg: t.TempDir(), home: t.TempDir(), system: filepath.Join(t.TempDir(), "etc", "rules.toml")}
			t.Setenv("XDG_CONFIG_HOME", e.xdg)
			t.Setenv("HOME", e.home)
			old := systemRulesPath
			systemRulesPath = e.system
			t.Cleanup(func() { systemRulesPath = old })

			explicit, want := tt.setup(t, e)
			got, data, err := readRules(explicit, func(p string, err error) { t.Errorf("skipped %s: %v", p, err) })
			switch {
			case tt.wantErr != nil || tt.anyError:
				if err == nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("readRules(%q) error %v, want %v", explicit, err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("readRules(%q): %v", explicit, err)
			case got != want:
				t.Errorf("readRules(%q) = %q, want %q", explicit, got, want)
			case want != "" && string(data) != "# rules\n":
				t.Errorf("readRules(%q) read %q", explicit, data)
			}
		})
	}
}

func TestLoadRulesFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.toml")
	_, err := loadRulesFile(path)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v does not wrap ErrNotExist and name %s", err, path)
	}
}

// TestUnreadableHomeRules runs sandtop as nobody with a HOME it cannot
// read, as `setpriv --reuid=65534 ... sandtop list` does with root's HOME:
// the default rules file there counts as absent (and -v says so, once),
// while the same file named by --rules is an error, as is any --rules
// file nobody may read.
func TestUnreadableHomeRules(t *testing.T) {
	proctest.RequireRoot(t) // to become another user
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		proctest.SkipMissing(t, "no setpriv (util-linux)")
	}
	bin := proctest.NobodyBinary(t)
	dir := filepath.Dir(bin)
	// HOME is root's: a directory nobody cannot enter, holding rules.
	home := filepath.Join(dir, "home")
	rules := filepath.Join(home, ".config", "sandtop", "rules.toml")
	if err := os.MkdirAll(filepath.Dir(rules), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rules, []byte("# rules\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	// A rules file nobody can see but not read.
	private := filepath.Join(dir, "private.toml")
	if err := os.WriteFile(private, []byte("# rules\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	asNobody := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		argv, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin)
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME=", envRunArgs+"="+string(argv))
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("setpriv %v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}

	for _, tc := range []struct {
		args       []string
		code       int
		stderr     string // a substring of stderr ("" means stderr is empty)
		stderrOnce bool
	}{
		{args: []string{"list"}, code: exitOK},
		{args: []string{"list", "--json"}, code: exitOK},
		{args: []string{"-v", "list"}, code: exitOK, stderr: "skipping rules file " + rules + ": permission denied", stderrOnce: true},
		{args: []string{"--rules", rules, "list"}, code: exitUsage, stderr: "permission denied"},
		{args: []string{"--rules", private, "list"}, code: exitUsage, stderr: "permission denied"},
		{args: []string{"rules", "--check", private}, code: exitFailure, stderr: "permission denied"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := asNobody(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, errOut)
			}
			switch {
			case tc.stderr == "" && errOut != "":
				t.Errorf("stderr %q, want none", errOut)
			case !strings.Contains(errOut, tc.stderr):
				t.Errorf("stderr %q, want %q", errOut, tc.stderr)
			case tc.stderrOnce && strings.Count(errOut, tc.stderr) != 1:
				t.Errorf("stderr says it %d times: %q", strings.Count(errOut, tc.stderr), errOut)
			}
			if tc.code == exitOK && out == "" {
				t.Errorf("no output")
			}
		})
	}
}

// TestRulesFileOverLimit: a rules file beyond the size limit is refused
// with exit 2 by every command that reads it (rules --check: 1, its
// "not valid"), naming the file and the limit, without reading it whole:
// /dev/zero never ends.
func TestRulesFileOverLimit(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.toml")
	if err := os.WriteFile(big, []byte(strings.Repeat("#\n", 600_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"list", "--rules", big}, exitUsage},
		{[]string{"list", "--rules", "/dev/zero"}, exitUsage},
		{[]string{"rules", "--check", big}, exitFailure},
	} {
		code, _, errOut := sandtop(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.args[2]+": over the limit: the file is larger than 1048576 bytes (1 MiB), the limit") {
			t.Errorf("%v: exit %d, want %d and the limit named:\n%s", c.args, code, c.code, errOut)
		}
	}
}
