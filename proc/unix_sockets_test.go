package proc

import (
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/sandtop/sandtop/proc/proctest"
)

func TestParseUnixListeners(t *testing.T) {
	const header = "Num       RefCount Protocol Flags    Type St Inode Path\n"
	tests := []struct {
		name    string
		in      string
		want    map[string]bool
		wantErr bool
	}{
		{
			name: "listening vs connected",
			in: header +
				"0000000000000000: 00000002 00000000 00010000 0001 01 20393 /run/box1/api.sock\n" +
				"0000000000000000: 00000003 00000000 00000000 0001 03 20394 /run/box1/api.sock\n" +
				"0000000000000000: 00000003 00000000 00000000 0001 03 20395 /run/connected-only.sock\n",
			want: map[string]bool{"/run/box1/api.sock": true},
		},
		{
			name: "path with spaces is kept whole",
			in:   header + "0000000000000000: 00000002 00000000 00010000 0001 01 20396 /run/my box/a b.sock\n",
			want: map[string]bool{"/run/my box/a b.sock": true},
		},
		{
			name: "abstract and unnamed",
			in: header +
				"0000000000000000: 00000002 00000000 00010000 0001 01 20397 @firecracker@abc\n" +
				"0000000000000000: 00000002 00000000 00010000 0005 01  1077\n",
			want: map[string]bool{"@firecracker@abc": true},
		},
		{
			name: "layout without the Inode column",
			in: "Num       RefCount Protocol Flags    Type St Path\n" +
				"0000000000000000: 00000002 00000000 00010000 0001 01 /run/old.sock\n",
			want: map[string]bool{"/run/old.sock": true},
		},
		{name: "header only", in: header, want: map[string]bool{}},
		{name: "empty", in: "", want: map[string]bool{}},
		{name: "short line", in: header + "0000000000000000: 00000002 00000000\n", wantErr: true},
		{name: "bad flags", in: header + "0000000000000000: 00000002 00000000 zz 0001 01 1 /x\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseUnixListeners([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && !maps.Equal(got, tt.want) {
				t.Errorf("listeners = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReadListenersLive opens a real listening socket, and a connection to
// it, and expects only the listener's path.
func TestReadListenersLive(t *testing.T) {
	dir, err := os.MkdirTemp("", "sandtop sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "listen here.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Skipf("cannot listen on a unix socket: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	abstract := "@sandtop-test-" + filepath.Base(dir)
	la, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { la.Close() })

	var c listenerCache
	got, err := c.read("/proc", 0)
	if err != nil {
		t.Fatalf("read /proc/net/unix: %v", err)
	}
	if !got[path] || !got[abstract] {
		t.Errorf("listeners lack %q or %q", path, abstract)
	}
	if got[conn.LocalAddr().String()] {
		t.Errorf("a connected socket's address %q counted as a listener", conn.LocalAddr())
	}
}

// A process binds an abstract socket whose name holds a newline and then
// what /proc/net/unix prints for a listener on another path: the text now
// has a line that reads as a listener on that path, and a name with a
// line too short for the layout fails the text's parse. The kernel's
// sock_diag records say which sockets listen: the forged path is not one,
// the hostile name is one, whole, and the table still reads.
func TestListenersForgedByAName(t *testing.T) {
	forged := "/run/sandtop-test-forged-" + strconv.Itoa(os.Getpid()) + ".sock"
	name := "@x\n0000000000000000: 00000002 00000000 00010000 0001 01 1 " + forged
	la, err := net.Listen("unix", name)
	if err != nil {
		t.Skipf("cannot listen on an abstract unix socket: %v", err)
	}
	t.Cleanup(func() { la.Close() })
	short := "@y\n0000000000000000: 00000002"
	ls, err := net.Listen("unix", short)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ls.Close() })
	if _, err := unixListenersDiag("/proc", 0); err != nil {
		proctest.SkipMissing(t, "the kernel's sock_diag of unix sockets is not there: %v", err)
	}
	for _, pid := range []int{0, os.Getpid()} {
		var c listenerCache
		got, err := c.read("/proc", pid)
		if err != nil {
			t.Fatalf("pid %d: the listeners do not read with a hostile name among them: %v", pid, err)
		}
		if got[forged] {
			t.Errorf("pid %d: a forged line counts %s as listened on", pid, forged)
		}
		if !got[name] || !got[short] {
			t.Errorf("pid %d: the hostile names are not listeners, whole: %q", pid, slices.Collect(maps.Keys(got)))
		}
	}
	socks, err := ListeningUnixSockets("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(socks, forged) || !slices.Contains(socks, name) {
		t.Errorf("this process listens on %q", socks)
	}
}
