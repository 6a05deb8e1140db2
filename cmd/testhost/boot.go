package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// guestScript runs in the guest (from the image's sandtop-testhost.service,
// with the 9p shares mounted at /mnt/in and /mnt/out).
//
//go:embed guest.sh
var guestScript []byte

// The console lines that say the guest is making progress: the kernel has
// started and systemd runs (a kernel stalled under a nested KVM shows
// neither), and the suite has begun.
const (
	markerSystemd = "Welcome to "
	markerSuite   = "sandtop-testhost: suite start"
	markerEnd     = "sandtop-testhost: suite end"
)

// bootQuick leaves out of the guest's boot what took minutes under TCG on
// a busy host and nothing the suite checks depends on: AppArmor (loading
// every profile; without the LSM, dockerd and lxc run unconfined), podman's
// auto-update and the ext4 metadata check, which hold back
// multi-user.target.
const bootQuick = "apparmor=0 systemd.mask=podman-auto-update.service systemd.mask=podman-restart.service " +
	"systemd.mask=e2scrub_reap.service systemd.mask=apt-daily.service systemd.mask=apt-daily-upgrade.service " +
	"systemd.mask=man-db.service systemd.mask=systemd-tmpfiles-clean.service"

// kvmProbe is how long a KVM boot may take to reach systemd before the
// harness calls KVM unusable and boots with TCG: on KVM a kernel reaches
// systemd in seconds, even on a loaded host.
const kvmProbe = 60 * time.Second

// run is one boot of the guest and what it left behind.
type run struct {
	scratch, out string
	pid          int
	status       string // the suite's exit status, "" when it never finished
	suiteLog     []byte
	versions     []byte
	bootLog      []byte // the guest's slowest units at boot
	ps           []byte // the guest's processes, as last written (every 20 s)
	console      string
	accel        string
}

func boot(c config, img image, t *timings) (*run, error) {
	scratch, err := os.MkdirTemp("", "sandtop-testhost-")
	if err != nil {
		return nil, fmt.Errorf("scratch dir: %w", err)
	}
	r := &run{scratch: scratch, out: filepath.Join(scratch, "out")}
	defer os.RemoveAll(scratch)
	in := filepath.Join(scratch, "in")
	for _, d := range []string{in, r.out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, fmt.Errorf("scratch dir: %w", err)
		}
	}
	if err := copyFile(c.sandtop, filepath.Join(in, "sandtop")); err != nil {
		return nil, err
	}
	if err := copyFile(c.suite, filepath.Join(in, "guest.test")); err != nil {
		return nil, err
	}
	defer r.collect()
	accels := []string{c.accel}
	if c.accel == "auto" {
		accels = []string{"tcg"}
		if kvmUsable(c.cache) {
			accels = []string{"kvm", "tcg"}
		}
	}
	for i, accel := range accels {
		r.accel = accel
		probe := time.Duration(0)
		if accel == "kvm" && i < len(accels)-1 {
			probe = kvmProbe
		}
		stalled, err := r.qemu(c, img, in, accel, probe, t)
		if err != nil {
			return r, err
		}
		if !stalled {
			break
		}
		fmt.Printf("testhost: no systemd %s after starting QEMU with KVM: this host's KVM stalls a standard kernel; booting with TCG\n", kvmProbe)
		rememberKVMStall(c.cache)
		if err := os.RemoveAll(r.out); err != nil {
			return r, fmt.Errorf("clear output: %w", err)
		}
		if err := os.Mkdir(r.out, 0o755); err != nil {
			return r, fmt.Errorf("scratch dir: %w", err)
		}
	}
	return r, nil
}

// collect reads what the guest wrote back, whether it finished or was
// killed at the deadline (then the suite's output so far).
func (r *run) collect() {
	r.suiteLog, _ = os.ReadFile(filepath.Join(r.out, "suite.log"))
	r.versions, _ = os.ReadFile(filepath.Join(r.out, "versions"))
	r.bootLog, _ = os.ReadFile(filepath.Join(r.out, "boot"))
	r.ps, _ = os.ReadFile(filepath.Join(r.out, "ps"))
	if st, err := os.ReadFile(filepath.Join(r.out, "status")); err == nil {
		r.status = strings.TrimSpace(string(st))
	}
}

// writeScript writes the guest script for a boot that must be over by end.
func (r *run) writeScript(c config, in string, end time.Time) error {
	script := bytes.ReplaceAll(guestScript, []byte("@RUN@"), []byte(shellQuote(c.run)))
	script = bytes.ReplaceAll(script, []byte("@END@"), []byte(strconv.FormatInt(end.Unix(), 10)))
	if err := os.WriteFile(filepath.Join(in, "guest.sh"), script, 0o644); err != nil {
		return fmt.Errorf("guest script: %w", err)
	}
	return nil
}

// qemu boots the guest once and waits for it to power off, or kills it at
// the deadline (or at the KVM probe's end without systemd: stalled).
func (r *run) qemu(c config, img image, in, accel string, probe time.Duration, t *timings) (stalled bool, err error) {
	console := filepath.Join(r.scratch, "console.log")
	cpu := "max"
	if accel == "kvm" {
		cpu = "host"
	}
	args := []string{
		"-machine", "q35,accel=" + accel, "-cpu", cpu, "-smp", "2", "-m", "3072",
		"-display", "none", "-monitor", "none", "-serial", "file:" + console, "-no-reboot",
		"-kernel", img.kernel, "-initrd", img.initrd,
		"-append", "console=ttyS0 root=/dev/vda rw panic=-1 systemd.show_status=1 " + bootQuick,
		"-drive", "file=" + img.disk + ",if=virtio,format=raw,snapshot=on",
		"-virtfs", "local,path=" + in + ",mount_tag=in,security_model=none,readonly=on",
		"-virtfs", "local,path=" + r.out + ",mount_tag=out,security_model=none",
		"-nic", "none",
	}
	start := time.Now()
	if err := r.writeScript(c, in, start.Add(c.deadline)); err != nil {
		return false, err
	}
	cmd := exec.Command("qemu-system-x86_64", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("start QEMU: %w", err)
	}
	r.pid = cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	fmt.Printf("testhost: QEMU (%s) pid %d, deadline %s\n", accel, r.pid, c.deadline)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var booted, suite, ended time.Time
	for {
		select {
		case err := <-done:
			r.console = readTail(console)
			if booted.IsZero() {
				return false, fmt.Errorf("guest ended before systemd ran (%v): %s\nconsole:\n%s", err, strings.TrimSpace(stderr.String()), r.console)
			}
			t.measure(suite, ended)
			return false, nil
		case <-tick.C:
			text, _ := os.ReadFile(console)
			if booted.IsZero() && bytes.Contains(text, []byte(markerSystemd)) {
				booted = time.Now()
				t.kernel = booted.Sub(start)
			}
			if suite.IsZero() && bytes.Contains(text, []byte(markerSuite)) {
				suite = time.Now()
				t.boot = suite.Sub(start)
			}
			if ended.IsZero() && bytes.Contains(text, []byte(markerEnd)) {
				ended = time.Now()
			}
			late := probe > 0 && booted.IsZero() && time.Since(start) > probe
			if late || time.Since(start) > c.deadline {
				// Killed by the pid QEMU was started as, and reaped
				// (cmd.Wait in the goroutine) before going on.
				cmd.Process.Kill()
				<-done
				r.console = readTail(console)
				t.measure(suite, ended)
				if late {
					return true, nil
				}
				return false, fmt.Errorf("guest still running after %s: killed QEMU pid %d (%s); console:\n%s", c.deadline, r.pid, accel, r.console)
			}
		}
	}
}

// kvmUsable says whether to try KVM: /dev/kvm opens and this host, since
// its boot, has not been seen stalling a standard kernel under it.
func kvmUsable(cache string) bool {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	_, err = os.Stat(kvmStallFile(cache))
	return err != nil
}

func kvmStallFile(cache string) string {
	id, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return filepath.Join(cache, "kvm-stalls-"+strings.TrimSpace(string(id)))
}

func rememberKVMStall(cache string) {
	old, _ := filepath.Glob(filepath.Join(cache, "kvm-stalls-*"))
	for _, o := range old {
		os.Remove(o)
	}
	os.WriteFile(kvmStallFile(cache), nil, 0o644)
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("read %s: %w", from, err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", to, err)
	}
	return nil
}

func readTail(path string) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
