package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandtop/sandtop/cmd/sandtop/internal/assets"
)

// TestSystemdUnitsWhereInstallPuts: the units run the binary where the
// README's `make install` puts it, and systemd-analyze verify accepts each
// unit with the binary installed there (staged under DESTDIR, as a package
// build would).
func TestSystemdUnitsWhereInstallPuts(t *testing.T) {
	analyze := lookTool(t, "systemd-analyze")
	root, _ := filepath.Abs(filepath.Join(testRoot, "..", ".."))
	if !strings.Contains(string(readDoc(t, "README.md")), "\nmake install ") {
		t.Fatal("the README's install shows no `make install`")
	}
	stage, bin := t.TempDir(), t.TempDir()
	cmd := exec.Command("make", "install", "DESTDIR="+stage, "BIN="+bin)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	installed := filepath.Join(stage, assets.DefaultBinary)
	if fi, err := os.Stat(installed); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("make install put no executable at %s: %v", assets.DefaultBinary, err)
	}
	for _, name := range assets.Units() {
		code, out, errOut := sandtop(t, "config", "systemd", name)
		if code != 0 || !strings.Contains(out, "ExecStart="+assets.DefaultBinary+" "+name) {
			t.Errorf("config systemd %s: exit %d, ExecStart not %s %s", name, code, assets.DefaultBinary, name)
		}
		if _, err := os.Stat(assets.DefaultBinary); err != nil && !strings.Contains(errOut, "make install") {
			t.Errorf("config systemd %s with no %s: no warning (%q)", name, assets.DefaultBinary, errOut)
		}
		// The same unit, run from where the staged install put it.
		code, out, errOut = sandtop(t, "config", "systemd", "--bin", installed, name)
		if code != 0 || errOut != "" {
			t.Fatalf("config systemd --bin %s: exit %d %s", installed, code, errOut)
		}
		unit := filepath.Join(t.TempDir(), assets.UnitFile(name))
		if err := os.WriteFile(unit, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(analyze, "verify", "--man=no", unit).CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
		}
	}
	if code, _, errOut := sandtop(t, "config", "systemd", "--bin", "relative/sandtop"); code != exitUsage || !strings.Contains(errOut, "--bin") {
		t.Errorf("config systemd --bin relative/sandtop: exit %d, %s", code, errOut)
	}
}
