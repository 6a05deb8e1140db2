package model

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sandtop/sandtop/proc"
)

// Daemon is a runtime's long-lived service: what that runtime's sandboxes
// depend on without it being a member of any of them. Tearing one down as
// a process tree takes every sandbox it serves with it (killing containerd
// turns each of its containers into an orphan at once), so a daemon is
// never a target of its own: kill the sandboxes, or stop the service
// through its init system.
type Daemon struct {
	// Name is the daemon's usual name, for messages.
	Name string
	// Exe is matched against argv[0], then against the exe path.
	Exe *regexp.Regexp
	// Argv, when set, must match argv joined by single spaces too (podman
	// is a daemon only as `podman system service`).
	Argv *regexp.Regexp
	// Runtimes are the runtimes (rule names) whose sandboxes it serves.
	Runtimes []string
	// Doc cites where the shape comes from.
	Doc string
}

// Daemons returns the runtime daemons the presets know. Read-only.
var Daemons = sync.OnceValue(func() []Daemon {
	re := regexp.MustCompile
	return []Daemon{
		{Name: "containerd", Exe: re(`(?:^|/)containerd$`), Runtimes: []string{"containerd", "docker", "kata", "gvisor", "kubernetes"},
			Doc: "containerd, behind every shim's -address: containerd/containerd cmd/containerd"},
		{Name: "dockerd", Exe: re(`(?:^|/)dockerd$`), Runtimes: []string{"docker"},
			Doc: "the Docker daemon, which runs its containers through containerd's namespace moby: moby/moby cmd/dockerd"},
		{Name: "cubelet", Exe: re(`(?:^|/)[Cc]ubelet$`), Runtimes: []string{"cube"},
			Doc: "CubeSandbox's Cubelet, behind containerd-shim-cube-rs -address: TencentCloud/CubeSandbox Cubelet/services/cubebox/local.go"},
		{Name: "kubelet", Exe: re(`(?:^|/)kubelet$`), Runtimes: []string{"kubernetes"},
			Doc: "the Kubernetes node agent, which owns every pod cgroup: kubernetes/kubernetes cmd/kubelet"},
		{Name: "cri-o", Exe: re(`(?:^|/)crio$`), Runtimes: []string{"kubernetes", "cri-o"},
			Doc: "CRI-O, conmon's parent for Kubernetes pods: cri-o/cri-o cmd/crio"},
		{Name: "podman system service", Exe: re(`(?:^|/)podman$`), Argv: re(`(?:^| )system service(?: |$)`), Runtimes: []string{"podman"},
			Doc: "podman's API service, the parent of the conmons of the containers it starts: containers/podman cmd/podman/system/service.go"},
		{Name: "systemd-machined", Exe: re(`(?:^|/)systemd-machined$`), Runtimes: []string{"machine", "nspawn"},
			Doc: "systemd's machine registry, which owns machine.slice/machine-<name>.scope: systemd/systemd src/machine/machined.c"},
		{Name: "libvirtd", Exe: re(`(?:^|/)(?:libvirtd|virtqemud)$`), Runtimes: []string{"machine"},
			Doc: "libvirt's daemons, the parents of the QEMU machines they register: libvirt/libvirt src/remote/remote_daemon.c"},
	}
})

// DaemonOf returns the runtime daemon p is, if it is one.
func DaemonOf(p *proc.Process) (Daemon, bool) { return daemonAmong(p, exeFits(daemonExeOf(p))) }

// daemonExeKey is what a daemon's Exe matcher is asked of a process: its
// argv[0] and its exe path.
type daemonExeKey struct{ argv0, exe string }

func daemonExeOf(p *proc.Process) daemonExeKey {
	k := daemonExeKey{exe: strings.TrimSuffix(p.Exe, deletedSuffix)}
	if len(p.Argv) > 0 {
		k.argv0 = p.Argv[0]
	}
	return k
}

// exeFits returns the positions in Daemons of those whose Exe matches k.
func exeFits(k daemonExeKey) []int {
	var fits []int
	for i, d := range Daemons() {
		if k.argv0 != "" && d.Exe.MatchString(k.argv0) || k.exe != "" && d.Exe.MatchString(k.exe) {
			fits = append(fits, i)
		}
	}
	return fits
}

// daemonAmong returns the first of the daemons at fits whose Argv, if it
// has one, matches p's.
func daemonAmong(p *proc.Process, fits []int) (Daemon, bool) {
	for _, i := range fits {
		d := Daemons()[i]
		if d.Argv == nil || d.Argv.MatchString(strings.Join(p.Argv, " ")) {
			return d, true
		}
	}
	return Daemon{}, false
}

// daemonExes remembers exeFits for each argv[0] and exe asked about. A
// host of thousands of processes runs a handful of binaries, and the
// leftover search looks for daemons among all of them whenever an empty
// cgroup awaits judgement (see Leftovers.runtimeRemoves): asked afresh at
// every refresh, the daemons' regexps were a third of the screen's CPU at
// 3,000 processes.
type daemonExes map[daemonExeKey][]int

// maxDaemonExes bounds the memo: a host whose binaries keep changing
// (a fork loop of fresh paths) starts it afresh rather than grow it. An
// argv[0] is the process's to write, as long as it likes: one longer
// than maxDaemonExeKey (no daemon's path is) is asked afresh, never kept.
const (
	maxDaemonExes   = 4096
	maxDaemonExeKey = 512
)

// of is DaemonOf, its Exe matchers asked once per argv[0] and exe.
func (m daemonExes) of(p *proc.Process) (Daemon, bool) {
	k := daemonExeOf(p)
	if len(k.argv0)+len(k.exe) > maxDaemonExeKey {
		return daemonAmong(p, exeFits(k))
	}
	fits, ok := m[k]
	if !ok {
		if len(m) >= maxDaemonExes {
			clear(m)
		}
		fits = exeFits(k)
		m[k] = fits
	}
	return daemonAmong(p, fits)
}

// SupervisorSocket is the unix socket whose listener is the sandbox's live
// supervisor (containerd's, behind a shim's -address), "" when it has none
// or the supervisor is not known to be alive.
func (s *Sandbox) SupervisorSocket() string {
	if !s.Supervised {
		return ""
	}
	return s.socket
}

// DependOn lists the live sandboxes that depend on p: those whose
// supervisor p is (an ancestor that a rule names) and those whose
// supervisor socket is one of listens (the unix sockets p, or for a daemon
// its subtree, listens on: dockerd's own containerd). A runtime daemon
// serves, besides, the sandboxes whose supervisor socket its argv names
// (dockerd --containerd=<socket>, kubelet's --container-runtime-endpoint),
// and those of its runtimes that have no supervisor of their own to tell
// which daemon they belong to (a machine, under the host's one machined).
// A sandbox supervised through another daemon's socket (another
// containerd's) does not depend on p. A process any sandbox depends on is
// no target of its own.
func (v *View) DependOn(p *proc.Process, listens []string) []*Sandbox {
	d, daemon := DaemonOf(p)
	argv := strings.Join(p.Argv, " ")
	var out []*Sandbox
	for _, sb := range v.Sandboxes {
		sock := sb.SupervisorSocket()
		switch {
		case sb.Supervisor != nil && sb.Supervisor.PID == p.PID && sb.Supervisor.Start == p.Start,
			sock != "" && slices.Contains(listens, sock):
			out = append(out, sb)
		case !daemon || len(sb.Members) == 0:
		case sock != "" && namesSocket(argv, sock),
			sock == "" && sb.Supervisor == nil && !sb.Orphan && slices.Contains(d.Runtimes, sb.Runtime):
			out = append(out, sb)
		}
	}
	return out
}

// namesSocket reports whether argv names the socket path as a whole
// argument or flag value (--containerd=/run/containerd/containerd.sock,
// unix:///run/containerd/containerd.sock).
func namesSocket(argv, sock string) bool {
	for off := 0; ; {
		i := strings.Index(argv[off:], sock)
		if i < 0 {
			return false
		}
		end := off + i + len(sock)
		if end == len(argv) || argv[end] == ' ' {
			return true
		}
		off = end
	}
}
