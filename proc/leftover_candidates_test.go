package proc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/proc/proctest"
)

func TestGlob(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got, err := Glob([]string{filepath.Join(dir, "*"), filepath.Join(dir, "a"), filepath.Join(dir, "nothing", "*")})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, filepath.Base(e.Path)+":"+string(e.Kind))
		if e.ModTime.IsZero() {
			t.Errorf("%s: no mtime", e.Path)
		}
	}
	if want := []string{"a:dir", "b:dir", "f:file", "s:socket"}; !slices.Equal(kinds, want) {
		t.Errorf("Glob = %v, want %v (sorted, each once)", kinds, want)
	}
	for _, pat := range []string{"/*", "/*/x", "/?un", "relative/*", "/[a-z]*/vm0"} {
		if _, err := Glob([]string{pat}); err == nil {
			t.Errorf("Glob(%q) was not refused", pat)
		} else if strings.HasPrefix(pat, "/") && !errors.Is(err, ErrBroadGlob) {
			t.Errorf("Glob(%q): %v, want ErrBroadGlob", pat, err)
		}
	}
}

// TestListCgroups makes a cgroup tree and finds the cgroups asked for,
// each with its state, without descending into them.
func TestListCgroups(t *testing.T) {
	proctest.RequireRoot(t)
	sc, err := NewScanner(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	m := sc.Mounts()
	if m.Unified == "" || unix.Access(m.Unified, unix.W_OK) != nil {
		proctest.SkipMissing(t, "no writable cgroup2 mount")
	}
	top, err := os.MkdirTemp(m.Unified, "sandtop-leftover-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, d := range []string{"box/empty/child", "box/empty", "box/busy", "box", ""} {
			// A cgroup stays busy for a moment after its last task died.
			proctest.Eventually(2*time.Second, func() bool {
				err := unix.Rmdir(filepath.Join(top, d))
				return err == nil || errors.Is(err, unix.ENOENT)
			})
		}
	}()
	for _, d := range []string{"box/empty/child", "box/busy"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A process in box/busy makes it populated.
	cmd := sleepIn(t, filepath.Join(top, "box/busy"))
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	base := "/" + filepath.Base(top)
	wanted := func(p string) (take, descend bool) { return strings.HasPrefix(p, base+"/box/"), false }
	got, err := ListCgroups(m, wanted, nil)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]bool{}
	for _, c := range got {
		states[c.Path] = c.Populated
		if c.Dir != filepath.Join(m.Unified, c.Path) || c.ModTime.IsZero() || c.V1 {
			t.Errorf("%+v", c)
		}
	}
	want := map[string]bool{base + "/box/empty": false, base + "/box/busy": true}
	if len(states) != len(want) || states[base+"/box/empty"] || !states[base+"/box/busy"] {
		t.Errorf("ListCgroups = %v, want %v (and not box/empty/child: it is part of box/empty)", states, want)
	}

	// A cgroup the caller vouches for is taken as populated without a
	// read: box/empty, which a read finds empty, shows that it was not read.
	got, err = ListCgroups(m, wanted, func(p string) bool { return p == base+"/box/empty" })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if !c.Populated || c.ModTime.IsZero() {
			t.Errorf("vouched for box/empty: %+v, want populated, with its mtime", c)
		}
	}
	if len(got) != 2 {
		t.Errorf("vouched for box/empty: %d cgroups, want 2", len(got))
	}

	// A walk told to descend below a cgroup it takes lists that cgroup
	// before those below it.
	got, err = ListCgroups(m, func(p string) (take, descend bool) {
		take = strings.HasPrefix(p, base+"/box/")
		return take, take
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range got {
		order = append(order, strings.TrimPrefix(c.Path, base+"/box/"))
	}
	if want := []string{"busy", "empty", "empty/child"}; !slices.Equal(order, want) {
		t.Errorf("descending: %q, want %q", order, want)
	}
}

// sleepIn starts a sleep in the cgroup at dir.
func sleepIn(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("move into %s: %v", dir, err)
	}
	return cmd
}

// A file system may leave d_type unknown; the entry is then asked about.
// Records are built by hand: no file system here leaves it unknown.
func TestAppendSubdirsWithoutDType(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"sub", "other"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	record := func(name string, typ byte) []byte {
		n := (19 + len(name) + 1 + 7) &^ 7 // d_reclen is 8-aligned, as the kernel writes it
		b := make([]byte, n)
		binary.NativeEndian.PutUint16(b[16:], uint16(n))
		b[18] = typ
		copy(b[19:], name)
		return b
	}
	var b []byte
	for _, name := range []string{".", "..", "sub", "file", "link", "gone"} {
		b = append(b, record(name, unix.DT_UNKNOWN)...)
	}
	b = append(b, record("other", unix.DT_DIR)...)
	b = append(b, record("fifo", unix.DT_FIFO)...)
	got := appendSubdirs(nil, fd, b)
	if want := []string{"sub", "other"}; !slices.Equal(got, want) {
		t.Errorf("appendSubdirs = %q, want %q (no file, no symbolic link, no vanished entry)", got, want)
	}
	// A short or cut record ends the parse rather than reading past it.
	if got := appendSubdirs(nil, fd, b[:len(b)-3]); !slices.Equal(got, []string{"sub", "other"}) {
		t.Errorf("a cut last record: %q", got)
	}
}

// subdirs reads a directory of more entries than one getdents buffer holds.
func TestSubdirsOverManyReads(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := range 300 {
		name := fmt.Sprintf("d%03d", i)
		want = append(want, name)
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f"+name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := subdirs(dir, make([]byte, 512))
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("subdirs = %d names %v, want %d", len(got), err, len(want))
	}
	if _, err := subdirs(filepath.Join(dir, "missing"), make([]byte, 512)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("subdirs of a missing directory: %v, want not-exist", err)
	}
}
