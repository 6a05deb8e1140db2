// Command testhost runs sandtop against a real modern Linux host: Debian 12
// booted in QEMU, systemd as PID 1 on pure cgroup v2, with Docker (systemd
// cgroup driver), podman, systemd-nspawn under machined, standalone runc,
// Kubernetes-shaped pods on containerd, gVisor and LXC, as Debian packages
// them. `make test-host` drives it:
//
//  1. image: the guest's disk is built once from Debian's packages
//     (image.sh: debootstrap, then mkfs.ext4 -d, no loop mount) and cached
//     under -cache, keyed by image.sh's hash, so a change to the package
//     list or a build step rebuilds it;
//  2. boot: QEMU boots the image's kernel directly, the disk opened
//     read-only (-snapshot), with KVM when a standard kernel boots under
//     it, else TCG (the verdict is kept for the host's boot);
//  3. suite: sandtop and the guest suite (a Go test binary) go in over 9p,
//     the suite's output and exit status come back the same way, and the
//     guest powers itself off; a guest still running at -deadline is killed
//     by its pid.
//
// It prints each runtime's check counts and the phase timings, checks that
// nothing of the run is left (QEMU process, scratch directories, mounts),
// and exits 1 when a check failed or the guest did not finish.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

func main() {
	cache := flag.String("cache", "/var/cache/sandtop-testhost", "where the built image is kept between runs")
	script := flag.String("image", "cmd/testhost/image.sh", "the image build script (its hash keys the cache)")
	mirror := flag.String("mirror", "", "Debian mirror for the image (default: the one this host's apt uses)")
	sandtop := flag.String("sandtop", "bin/sandtop", "the static sandtop binary to test")
	suite := flag.String("suite", "bin/guest.test", "the guest suite (go test -c of ./cmd/testhost/guest)")
	accel := flag.String("accel", "auto", "auto, kvm or tcg")
	deadline := flag.Duration("deadline", 14*time.Minute, "the guest is killed when it has not powered off by then")
	run := flag.String("run", "", "only the guest checks matching this (go test -run)")
	flag.Parse()
	if err := testHost(config{
		cache: *cache, script: *script, mirror: *mirror, sandtop: *sandtop, suite: *suite,
		accel: *accel, deadline: *deadline, run: *run,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "testhost:", err)
		os.Exit(1)
	}
}

type config struct {
	cache, script, mirror, sandtop, suite, accel, run string
	deadline                                          time.Duration
}

func testHost(c config) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (the image is built with debootstrap and chroot)")
	}
	for _, p := range []*string{&c.script, &c.sandtop, &c.suite} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("resolve %s: %w", *p, err)
		}
		*p = abs
	}
	var t timings
	fmt.Printf("testhost: load average %s\n", loadAverage())
	start := time.Now()
	img, built, err := ensureImage(c)
	if err != nil {
		return err
	}
	t.image, t.imageBuilt = time.Since(start), built
	res, bootErr := boot(c, img, &t)
	if res == nil {
		return bootErr
	}
	// What the guest reported, the phases and the leftover check, also
	// when the guest was killed at the deadline.
	res.print(os.Stdout)
	t.print(os.Stdout)
	if err := res.leftovers(); err != nil {
		return errors.Join(bootErr, err)
	}
	fmt.Println("testhost: nothing left behind (QEMU process, scratch directories, mounts)")
	if bootErr != nil {
		return bootErr
	}
	return res.verdict()
}
