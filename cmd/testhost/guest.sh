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
# The boot's slowest units (systemd-analyze blame needs a finished boot,
# and this unit is part of it).
{
	echo "up $(cut -d' ' -f1 /proc/uptime)s at the suite's start; slowest units:"
	systemctl show -p Id -p InactiveExitTimestampMonotonic -p ActiveEnterTimestampMonotonic '*' |
		awk 'BEGIN { RS = ""; FS = "\n" }
		{ id = ""; a = 0; s = 0
		  for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "Id") id = kv[2]
		    if (kv[1] == "ActiveEnterTimestampMonotonic") a = kv[2]; if (kv[1] == "InactiveExitTimestampMonotonic") s = kv[2] }
		  if (a > 0 && s > 0 && a >= s) printf "%7.1fs %s\n", (a - s) / 1e6, id }' | sort -rn | head -8
} >/mnt/out/boot 2>&1
# The suite's own timeout ends it in time for its output to come back
# before the harness kills the guest at @END@ (Unix time; the guest's
# clock is the host's, from QEMU's RTC).
left=$((@END@ - $(date +%s) - 90))
[ "$left" -gt 30 ] || left=30
# What runs in the guest, every 20 s: what a hung check waits for, shown
# by the harness when it kills the guest.
while sleep 20; do ps -eo pid,ppid,etime,args --forest | cut -c1-200 >/mnt/out/ps.new && mv /mnt/out/ps.new /mnt/out/ps; done &
cd /root
# Every test may be waiting for its lane at once (guest.inLane).
./guest.test -test.v -test.parallel 16 -test.timeout "${left}s" -test.run @RUN@ >/mnt/out/suite.log 2>&1
status=$?
echo "$status" >/mnt/out/status
sync
echo "sandtop-testhost: suite end $status" >/dev/console
systemctl --no-block poweroff
exit $status
