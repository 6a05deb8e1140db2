// Package fleet runs fleets of fake sandboxes made of real processes, for
// tests, the demo and screenshots. Each sandbox has the host-side shape of
// a real runtime (vm0, the Firecracker jailer, boxlite, CubeSandbox,
// containerd and Docker, podman, Kata, gVisor, Kubernetes pods, libvirt machines,
// Cloudflare sandbox sessions): the same chains of parents and children,
// argv, task names, process groups and sessions, working directories,
// cgroups and pid namespaces, without the runtimes themselves.
//
// # Processes
//
// Start re-executes a binary (by default the running one, so a test binary
// serves) as the fleet's owner, and the owner re-executes it again for
// every named process ("node"), each under the argv of the program it
// imitates and with the task name the kernel would give that program. A
// node is a Go program that waits; bulk leaves are the system's sleep
// binary, exec'd through a symlink named like the process it stands for,
// because thousands of them must fit in memory. The environment variable
// SANDSIM_ROLE tells a re-executed binary what to play, which is why every
// such binary calls MaybeRun first.
//
// # Ownership and cleanup
//
// The owner is a child subreaper: everything orphaned in the fleet (a
// killed supervisor's children, double-forked daemons, detached boxes) is
// re-parented to it, where a real host would use PID 1, and it reaps them.
// It tears the whole fleet down when Close asks, on SIGTERM/SIGINT/SIGHUP,
// when its stdin closes and when its parent dies (PR_SET_PDEATHSIG). It
// kills by identity only: cgroup.kill in the cgroups it made (after
// thawing them: a v1-frozen task dies only once thawed), and SIGKILL
// through a pidfd checked against the process's start time. Then it
// removes its cgroup directories and its temp directory.
//
// Every node also holds the read end of a pipe whose write end only the
// owner has; should the owner die abruptly, the nodes read EOF and exit,
// and leaves die with their parent node (PR_SET_PDEATHSIG). Paused members
// cannot react, so Close then does the owner's teardown itself from the
// manifest. The orphans of a dead owner are re-parented to the process
// that called Start, which Start makes a child subreaper for that reason;
// Close reaps them.
//
// # Why it kills and reads on its own
//
// The fleet is the ground truth sandtop's teardown and scanner are judged
// against, so it does not use them: pidfd.go, cgroup.go and procfs.go do
// again, plainly, what teardown and proc do (pin by pidfd and start time,
// cgroup.kill and freeze, read stat and cgroup through prometheus/procfs).
// Were Close and the leak check built on teardown and proc, a bug there
// (a wrong start time, a cgroup path read wrong, a process taken for gone)
// would make the same mistake on both sides and hide itself. Only the
// plain proc.Identity type is shared.
//
// # Tests
//
// A package whose tests start fleets needs this TestMain:
//
//	func TestMain(m *testing.M) { fleet.Main(m) }
//
// Main runs MaybeRun (so the test binary can play owner and nodes), makes
// the test process a subreaper before any test runs, and reaps leftover
// zombies at the end. A test then does:
//
//	f, err := fleet.Start(ctx, fleet.Demo(), fleet.Options{Dir: t.TempDir()})
//	if err != nil { t.Fatal(err) }
//	t.Cleanup(func() {
//		if err := f.Close(); err != nil { t.Error(err) } // err names every leak
//	})
//	m := f.Manifest() // pids, start times, argv, cgroups of everything
//
// A node costs a Go runtime: about 6 MB of RSS, 1 MB of it private (the
// rest is the shared binary). A leaf costs about 0.4 MB. bulk:N spends one
// node per ten processes.
package fleet
