package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BusyboxRoot makes a root filesystem under dir from busybox-static's one
// binary, for the tests that run containers and namespaces with no image
// to pull (there is no network): the applets they run, root in passwd and
// group, and an os-release, which systemd-nspawn wants before it takes a
// directory for an OS tree. Without busybox it skips (SkipMissing: make
// test-deps installs it). It returns dir.
func BusyboxRoot(t testing.TB, dir string) string {
	t.Helper()
	bb, err := exec.LookPath("busybox")
	if err != nil {
		SkipMissing(t, "no busybox (Debian busybox-static, installed by make test-deps): no root filesystem to run")
	}
	for _, d := range []string{"bin", "sbin", "etc", "proc", "sys", "dev", "tmp", "usr/lib", "root", "run", "var"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin/busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"sh", "sleep", "true", "cat", "echo", "ls", "ps"} {
		if err := os.Symlink("busybox", filepath.Join(dir, "bin", a)); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		"etc/passwd":         "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":          "root:x:0:\n",
		"usr/lib/os-release": "ID=busybox\nNAME=busybox\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
