package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// listenScript listens on every protocol in the network namespace it
// runs in, connects a TCP and a UDP socket (which do not listen), says
// "ready" and waits for stdin to close.
const listenScript = `
import socket, sys
d = sys.argv[1]
def s(fam, typ, addr, v6only=False):
    x = socket.socket(fam, typ)
    if v6only:
        x.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    x.bind(addr)
    if typ == socket.SOCK_STREAM:
        x.listen()
    return x
keep = [
    s(socket.AF_INET, socket.SOCK_STREAM, ("0.0.0.0", 7001)),
    s(socket.AF_INET6, socket.SOCK_STREAM, ("::", 7002), True),
    s(socket.AF_INET, socket.SOCK_DGRAM, ("0.0.0.0", 7003)),
    s(socket.AF_INET6, socket.SOCK_DGRAM, ("::", 7004), True),
    s(socket.AF_UNIX, socket.SOCK_STREAM, d + "/a sock"),
    s(socket.AF_UNIX, socket.SOCK_STREAM, "\0sandtop-abstract"),
]
print("ready", flush=True)
sys.stdin.read()
`

// startListener runs listenScript under wrap (a command that enters a
// network namespace) and returns its pid once it listens.
func startListener(t *testing.T, wrap ...string) int {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to listen with")
	}
	cmd := exec.Command(wrap[0], append(wrap[1:], py, "-c", listenScript, t.TempDir())...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill() // our own child, by its handle
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if strings.TrimSpace(line) != "ready" {
			t.Fatalf("listener said %q", line)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("listener not ready in 60 s")
	}
	return cmd.Process.Pid
}

// TestNetworkReaderListeners reads real listeners of every protocol in
// a named network namespace and in an unnamed one, through one of their
// processes, and reads none for a process in the host's namespace.
func TestNetworkReaderListeners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8)")
	}
	name := fmt.Sprintf("sandtop-nt-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", name).Run() })
	named := startListener(t, "ip", "netns", "exec", name)
	unnamed := startListener(t, "unshare", "-n")

	r := NewNetworkReader("")
	snap := &Snapshot{}
	r.Read(snap, []int{named, unnamed, os.Getpid(), 1 << 30})
	want := []string{"tcp 0.0.0.0:7001", "tcp6 [::]:7002", "udp 0.0.0.0:7003", "udp6 [::]:7004", "unix @sandtop-abstract"}
	for _, c := range []struct {
		pid  int
		name string
	}{{named, name}, {unnamed, ""}} {
		ino := snap.NetnsOf[c.pid]
		n := snap.Networks[ino]
		if ino == 0 || n == nil {
			t.Fatalf("pid %d: no namespace read (%v)", c.pid, snap.NetnsOf)
		}
		if n.Name != c.name || n.Host || n.Err != "" {
			t.Errorf("pid %d: namespace %+v, want name %q, not the host's, no error", c.pid, n, c.name)
		}
		var got []string
		path := ""
		for _, l := range n.Listeners {
			if l.Proto == "unix" && strings.HasSuffix(l.Addr, "/a sock") {
				path = l.Addr
				continue
			}
			got = append(got, l.Proto+" "+l.Addr)
			if l.Inode == 0 {
				t.Errorf("pid %d: %s %s has no inode", c.pid, l.Proto, l.Addr)
			}
		}
		if !slices.Equal(got, want) || filepath.Base(path) != "a sock" {
			t.Errorf("pid %d: listeners %q and path %q, want %q and a path with a space", c.pid, got, path, want)
		}
	}
	if snap.NetnsOf[named] == snap.NetnsOf[unnamed] {
		t.Error("two namespaces read as one")
	}
	self := snap.Networks[snap.NetnsOf[os.Getpid()]]
	if self == nil || !self.Host || len(self.Listeners) != 0 {
		t.Errorf("the test's own namespace: %+v", self)
	}
	if _, ok := snap.NetnsOf[1<<30]; ok {
		t.Error("a pid that does not exist has a namespace")
	}
}

func TestParseSockAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0035":                         "0.0.0.0:53",
		"00000000000000000000000001000000:0016": "[::1]:22",
		"0000000000000000FFFF00000100007F:0050": "[::ffff:127.0.0.1]:80",
	} {
		got, err := parseSockAddr([]byte(in))
		if err != nil || got.String() != want {
			t.Errorf("parseSockAddr(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "XX00007F:0050", "0100007F:10000", "01007F:0050"} {
		if _, err := parseSockAddr([]byte(bad)); err == nil {
			t.Errorf("parseSockAddr(%q) accepted", bad)
		}
	}
}

// TestAppendIPListeners: connected sockets do not listen, whatever they
// are bound to.
func TestAppendIPListeners(t *testing.T) {
	head := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	tcp := head +
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 101 1 0 100 0 0 10 0\n" +
		"   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 102 1 0 20 4 30 10 -1\n" +
		"   2: garbage\n"
	got, err := appendIPListeners(nil, "tcp", []byte(tcp))
	if err == nil || len(got) != 1 || got[0] != (Listener{Proto: "tcp", Addr: "127.0.0.1:8080", Inode: 101}) {
		t.Errorf("tcp: %+v, %v; want the LISTEN socket only and an error for the odd line", got, err)
	}
	udp := head +
		"  10: 00000000:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 201 2 0 0\n" +
		"  11: 0100007F:A000 0100007F:0035 01 00000000:00000000 00:00000000 00000000     0        0 202 2 0 0\n" +
		"  12: 0100007F:A001 0100007F:0035 07 00000000:00000000 00:00000000 00000000     0        0 203 2 0 0\n"
	got, err = appendIPListeners(nil, "udp", []byte(udp))
	if err != nil || len(got) != 1 || got[0] != (Listener{Proto: "udp", Addr: "0.0.0.0:53", Inode: 201}) {
		t.Errorf("udp: %+v, %v; want the unconnected socket only", got, err)
	}
}
