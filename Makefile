# sandtop — see README.md. Everything the tests need is fetched here (Go
# modules through the module proxy); nothing is expected to be pre-installed
# beyond Go itself.
GO          ?= go
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
BIN         := bin
PKGS        := ./...
BENCHTIME   ?= 1x

.PHONY: all build install demo screenshots test test-all test-deps lint vet fmt-check staticcheck tidy-check bench clean torture no-binaries test-host

all: build

# The binaries are static (no cgo): sandtop runs on whatever host it is
# copied to in an incident, whatever its libc, and maps no libc or loader
# (about 1.4 MiB of every command's resident memory). os/user then reads
# /etc/passwd itself: a user known only through NSS (LDAP, sssd) shows as
# a uid.
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/sandtop ./cmd/sandtop
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/sandsim ./cmd/sandsim

# Installs sandtop where `sandtop config systemd` and the units expect it:
# $(PREFIX)/bin/sandtop, /usr/local/bin/sandtop by default (DESTDIR to
# stage it elsewhere).
PREFIX ?= /usr/local
install: build
	install -D -m 0755 $(BIN)/sandtop $(DESTDIR)$(PREFIX)/bin/sandtop

# The demo: a fleet of fake sandboxes (real processes) and the live screen
# on it. Quitting tears the fleet down.
demo: build
	$(BIN)/sandtop demo

# Regenerates screenshots/*.png from a real terminal (tmux + aha + headless
# Chromium, installed from Debian if missing). Run as root on a host with
# no other sandboxes.
screenshots: build
	screenshots/capture.sh

# Tools some tests drive, as command:Debian package: tmux is the real
# terminal the demo and read-only tests run in, strace watches the read-only
# programs' system calls, prometheus and promtool scrape `sandtop serve` and
# check its metrics and alert rules, systemd-analyze checks its unit, kubectl
# (kubernetes-client) decodes the Kubernetes manifest offline; the
# real runtimes (cmd/sandtop/realrt_test.go) are judged against: containerd,
# runc, dockerd, podman (+conmon), bubblewrap, QEMU and systemd-nspawn, with
# busybox-static for a root filesystem.
# Installed from Debian when missing and root; otherwise those tests skip.
# Debian's prometheus service is never started (a policy-rc.d refuses it,
# invoke-rc.d(8), while apt-get runs): the tests start their own.
TEST_TOOLS := tmux:tmux strace:strace prometheus:prometheus promtool:prometheus systemd-analyze:systemd kubectl:kubernetes-client \
	containerd:containerd ctr:containerd runc:runc dockerd:docker.io podman:podman conmon:conmon bwrap:bubblewrap \
	busybox:busybox-static qemu-system-x86_64:qemu-system-x86 systemd-nspawn:systemd-container \
	debootstrap:debootstrap
test-deps:
	@missing=$$(for t in $(TEST_TOOLS); do command -v $${t%%:*} >/dev/null || echo $${t#*:}; done | sort -u); \
	[ -z "$$missing" ] || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && { \
		policy=/usr/sbin/policy-rc.d; \
		if [ ! -e $$policy ]; then printf '#!/bin/sh\nexit 101\n' >$$policy && chmod +x $$policy && trap "rm -f $$policy" EXIT; fi; \
		install="apt-get install -y -qq --no-install-recommends $$missing"; \
		DEBIAN_FRONTEND=noninteractive $$install >/dev/null 2>&1 || \
		  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$install >/dev/null; }; }; } || \
		echo "missing $$missing: the tests that drive them will skip"

# Two tiers. `make test` is what a newcomer runs: every test, as any user,
# with whatever tools and runtimes the machine already has (nothing is
# installed; a test whose tool is missing skips and says so). The tests
# spawn real process trees, cgroups and signals; as root they also cover
# cgroup freeze/kill and PID reuse. The output is a plain go test's, then
# the list of every skipped test and why (cmd/skipreport).
#
# `make test-all` is CI's: it installs the test tools from Debian
# (test-deps), runs the same tests with the race detector, and with
# SANDTOP_TEST_ALL=1 as root a test that skips for want of what it
# provides (root, cgroup2, a tool or runtime) fails instead
# (proctest.SkipMissing); then, as root, the real-host suite (test-host).
test:
	$(GO) build -o $(BIN)/skipreport ./cmd/skipreport
	@st=$$(mktemp); \
	{ $(GO) test -json -count=1 -timeout 15m $(PKGS); echo $$? >$$st; } | $(BIN)/skipreport; report=$$?; \
	status=$$(cat $$st); rm -f $$st; \
	[ "$$status" = 0 ] && [ "$$report" = 0 ]

test-all: test-deps
	$(GO) build -o $(BIN)/skipreport ./cmd/skipreport
	@st=$$(mktemp); \
	{ SANDTOP_TEST_ALL=1 $(GO) test -json -race -count=1 -timeout 30m $(PKGS); echo $$? >$$st; } | $(BIN)/skipreport; report=$$?; \
	status=$$(cat $$st); rm -f $$st; \
	[ "$$status" = 0 ] && [ "$$report" = 0 ]
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory test-host; \
	else echo "test-all: not root, so the real-host suite did not run (make test-host builds its disk image as root)"; fi

# A real modern host: Debian 12 booted in QEMU (systemd, pure cgroup v2)
# with Docker, podman, systemd-nspawn, runc, containerd pods, gVisor and
# LXC from Debian, and a guest suite (cmd/testhost/guest) judging sandtop
# on it; see docs/development.md. The image is built once (a few minutes)
# and cached in TESTHOST_CACHE; the guest is killed at TESTHOST_DEADLINE.
# TESTHOST_RUN picks checks (go test -run), TESTHOST_ACCEL forces kvm or tcg.
TESTHOST_CACHE    ?= /var/cache/sandtop-testhost
TESTHOST_DEADLINE ?= 14m
test-host: test-deps
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/sandtop ./cmd/sandtop
	CGO_ENABLED=0 $(GO) test -c -tags testhost -o $(BIN)/guest.test ./cmd/testhost/guest
	$(GO) vet -tags testhost ./cmd/testhost/...
	$(GO) build -o $(BIN)/testhost ./cmd/testhost
	$(BIN)/testhost -cache $(TESTHOST_CACHE) -deadline $(TESTHOST_DEADLINE) -accel $(or $(TESTHOST_ACCEL),auto) \
		-run '$(TESTHOST_RUN)' -image cmd/testhost/image.sh -sandtop $(BIN)/sandtop -suite $(BIN)/guest.test

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# staticcheck is pinned by go.mod's tool directive: built once, cached.
staticcheck:
	$(GO) tool staticcheck $(PKGS)

lint: fmt-check vet staticcheck no-binaries

# Nothing built is committed: a tracked file that the kernel would load as
# a program (ELF) or that is executable without a #! line fails the lint.
# Nor is a symbolic link: a fixture's /proc/PID/cwd -> / would lead grep -R
# out of the checkout (fixtures list theirs in SYMLINKS; proctest.Fixture).
no-binaries:
	@links=$$(git ls-files -s | awk '$$1 == "120000" {print $$4}'); \
	if [ -n "$$links" ]; then echo "symbolic links are tracked:"; echo "$$links"; exit 1; fi
	@bad=$$(git ls-files -s | awk '$$1 == "100755" || $$1 == "100644" {print $$4}' | while read -r f; do \
		[ -f "$$f" ] || continue; \
		magic=$$(head -c 4 "$$f" | od -An -c | tr -d ' '); \
		if [ "$$magic" = "177ELF" ]; then echo "$$f"; \
		elif [ -x "$$f" ] && [ "$$(head -c 2 "$$f")" != '#!' ]; then echo "$$f"; fi; \
	done); \
	if [ -n "$$bad" ]; then echo "built or binary files are tracked:"; echo "$$bad"; exit 1; fi

tidy-check:
	$(GO) mod tidy
	@git diff --exit-code -- go.mod go.sum || { echo "go mod tidy changed go.mod/go.sum"; exit 1; }

# The scanner and model.Build run against a sandsim bulk fleet at each size
# in BENCH_PROCS (default 1000,10000), one `go test` per size so that each
# benchmark process starts one fleet; teardown starts a fleet per iteration;
# every other package's benchmarks run once. As root (they skip otherwise).
bench:
	$(GO) build -o $(BIN)/sandsim ./cmd/sandsim
	@set -e; for n in $$(echo "$(or $(BENCH_PROCS),1000 10000)" | tr , ' '); do \
		echo "== BENCH_PROCS=$$n"; \
		BENCH_PROCS=$$n SANDSIM=$(abspath $(BIN))/sandsim $(GO) test -p 1 -run '^$$' -bench . -benchmem -benchtime 20x ./proc ./model; \
	done
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2x ./teardown
	$(GO) test -p 1 -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $$($(GO) list $(PKGS) | grep -v -e '/proc$$' -e '/model$$' -e '/teardown$$')

# Whole-process comparisons, as a user meets sandtop: the live screen's CPU
# per refresh and wakeups against htop and btop side by side in tmux,
# `sandtop list` against ps (wall, CPU, peak RSS), `list --json` and the
# screen's RSS, `sandtop kill` end to end, at each size in BENCH_COMPARE_PROCS
# (default 100,1000,3000,10000,orphans:3000,orphans:10000; each in a PID
# namespace of its own, with a bulk fleet from 1,000, and fleets of
# orphaned containerd shims for list against ps), as one table with ratios
# and targets. About fifteen minutes. Installs procps, htop, btop, tmux and
# strace with apt-get when missing; needs root. BENCH_COMPARE_SANDTOP measures another build (the
# "before" column of a before/after table).
.PHONY: bench-compare bench-serve
# In a variable: written inside $(or …), the commas would split the sizes
# into arguments and leave only the first.
bench_compare_sizes := 100,1000,3000,10000,orphans:3000,orphans:10000
bench-compare: build
	$(GO) build -o $(BIN)/benchcompare ./cmd/benchcompare
	$(BIN)/benchcompare -sandtop $(or $(BENCH_COMPARE_SANDTOP),$(BIN)/sandtop) -procs $(or $(BENCH_COMPARE_PROCS),$(bench_compare_sizes))

# `sandtop serve --interval 15s` on a fleet of BENCH_COMPARE_PROCS: average
# CPU over SERVE_WINDOW (default 5m), RSS, scrape time. Needs root.
bench-serve: build
	$(GO) build -o $(BIN)/benchcompare ./cmd/benchcompare
	$(BIN)/benchcompare -sandtop $(BIN)/sandtop -procs $(or $(BENCH_COMPARE_PROCS),10000) -no-tui -only-serve -serve-window $(or $(SERVE_WINDOW),5m)

clean:
	rm -rf $(BIN)

# The torture suite: the full-size runs of the teardown trials, pid
# reuse, churn, permissions, resource and read-only tests (`make test` runs
# them bounded), then every /proc and rules parser fuzzed for FUZZTIME. The
# figures land in $(TORTURE_LOG) on the "TORTURE" lines. Knobs: TORTURE_N,
# TORTURE_REUSE, TORTURE_CHURN, TORTURE_WATCH, TORTURE_REAP (reaper passes over
# fleets with bouncing supervisors), TORTURE_SEED. One package at
# a time (-p 1): the churn test needs both cores to fork 1,000 a second.
FUZZTIME    ?= 20s
TORTURE_LOG ?= torture.log
PROC_FUZZ   := FuzzParseStat FuzzParseCmdline FuzzParseStatusIDs FuzzParseCgroupPaths FuzzParseCgroupEvents \
	FuzzParseFreezerState FuzzParseCgroupProcs FuzzParseChildren FuzzFindMounts FuzzParseUnixListeners
torture: test-deps
	$(GO) test -p 1 -tags torture -count=1 -timeout 90m -v -run 'Torture' ./teardown/ ./cmd/sandtop/ ./cmd/sandtop/internal/reap/ >$(TORTURE_LOG) 2>&1; \
	status=$$?; grep -h 'TORTURE \|^--- FAIL\|^FAIL' $(TORTURE_LOG); exit $$status
	for f in $(PROC_FUZZ); do $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) ./proc/ || exit 1; done
	$(GO) test -run '^$$' -fuzz '^FuzzParseRules$$' -fuzztime $(FUZZTIME) ./model/
