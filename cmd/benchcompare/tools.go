package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// ensureTools installs ps (procps), and with tui htop, btop, tmux and
// strace, when they are missing, with apt-get (Debian and Ubuntu, which
// these hosts run).
func ensureTools(tui, noAptGet bool) error {
	want := map[string]string{"ps": "procps"}
	if tui {
		want["htop"], want["btop"], want["tmux"], want["strace"] = "htop", "btop", "tmux", "strace"
	}
	var missing []string
	for bin, pkg := range want {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if noAptGet {
		return fmt.Errorf("missing %s (and -no-apt-get)", strings.Join(missing, ", "))
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("missing %s and no apt-get to install them", strings.Join(missing, ", "))
	}
	fmt.Fprintf(os.Stderr, "installing %s…\n", strings.Join(missing, " "))
	install := func() error {
		// Wait for a dpkg lock held by another apt-get rather than fail.
		args := append([]string{"-o", "DPkg::Lock::Timeout=600", "install", "-y", "-qq"}, missing...)
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		return cmd.Run()
	}
	if install() == nil {
		return nil
	}
	update := exec.Command("apt-get", "-o", "DPkg::Lock::Timeout=600", "update", "-qq")
	update.Stdout, update.Stderr = os.Stderr, os.Stderr
	if err := update.Run(); err != nil {
		return fmt.Errorf("apt-get update: %w", err)
	}
	if err := install(); err != nil {
		return fmt.Errorf("apt-get install %s: %w", strings.Join(missing, " "), err)
	}
	return nil
}

// describeMachine says what the numbers were measured on.
func describeMachine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	var uts unix.Utsname
	kernel := "unknown kernel"
	if unix.Uname(&uts) == nil {
		kernel = unix.ByteSliceToString(uts.Release[:])
	}
	var si unix.Sysinfo_t
	mem := ""
	if unix.Sysinfo(&si) == nil {
		mem = fmt.Sprintf(", %.0f GiB RAM", float64(si.Totalram)*float64(si.Unit)/(1<<30))
	}
	return fmt.Sprintf("%d × %s%s, Linux %s, %s", runtime.NumCPU(), model, mem, kernel, runtime.Version())
}
