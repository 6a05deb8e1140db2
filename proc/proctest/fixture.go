package proctest

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fixture copies the fixture tree at src (a fake / holding proc/ and sys/)
// into a temporary directory and creates there the symbolic links its
// SYMLINKS file lists, one "path target" a line. The checked-in trees hold
// no links: /proc/PID/cwd -> / in a checkout would lead grep -R, editors
// and indexers out of it into the host's root and its /proc.
func Fixture(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case rel == "SYMLINKS":
			return nil
		case d.Type()&fs.ModeSymlink != 0: // src is itself a copy
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy fixture %s: %v", src, err)
	}
	links, err := os.ReadFile(filepath.Join(src, "SYMLINKS"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("fixture %s: %v", src, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(links))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		path, target, ok := strings.Cut(line, " ")
		if !ok || filepath.IsAbs(path) || strings.Contains(path, "..") {
			t.Fatalf("fixture %s: bad SYMLINKS line %q (want: relative path, a space, the target)", src, line)
		}
		if err := os.Symlink(target, filepath.Join(dst, path)); err != nil {
			t.Fatalf("fixture %s: %v", src, err)
		}
	}
	return dst
}
