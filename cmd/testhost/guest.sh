#!/bin/sh
# The guest side of `make test-host`, run by sandtop-testhost.service once
# the guest is up, with /mnt/in (sandtop, the suite) and /mnt/out (its
# results) mounted over 9p; the unit powers the guest off after it.
echo "sandtop-testhost: suite start" >/dev/console
install -m 0755 /mnt/in/sandtop /usr/local/bin/sandtop
install -m 0755 /mnt/in/guest.test /root/guest.test
{
	echo "kernel $(uname -r)"
	echo "systemd $(systemctl --version | head -1)"
	echo "cgroup $(stat -fc %T /sys/fs/cgroup)"
	for v in "dockerd --version" "containerd --version" "runc --version" "crun --version" "podman --version" \
		"conmon --version" "systemd-nspawn --version" "lxc-start --version" "runsc --version"; do
		echo "$v: $($v 2>&1 | head -1)"
	done
} >/mnt/out/versions 2>&1
cd /root
./guest.test -test.v -test.timeout @TIMEOUT@ -test.run @RUN@ >/mnt/out/suite.log 2>&1
status=$?
echo "$status" >/mnt/out/status
sync
echo "sandtop-testhost: suite end $status" >/dev/console
systemctl --no-block poweroff
exit $status
