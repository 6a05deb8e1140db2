package proc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// /proc/net/unix prints a socket's name as its owner bound it, newlines
// and all: a process that binds an abstract socket whose name holds
// "\n0000000000000000: 00000002 00000000 00010000 0001 01 1 /run/x.sock"
// adds a line that reads as a listener on /run/x.sock, which no parser
// of the text can tell from the kernel's own (and a name that breaks the
// line layout fails the whole parse). A supervisor known by its socket
// would then seem alive, or a bystander seem to be it. The kernel's
// sock_diag interface (NETLINK_SOCK_DIAG, net/unix/diag.c) answers the
// same question in records, each name an attribute of its own length:
// the listeners are asked of it, and the text is read only where it is
// not there (a kernel without unix_diag, a namespace sandtop may not
// enter, a fixture tree).

// unixListener is one listening unix socket: its inode and its name as
// /proc/net/unix prints it (an abstract name with "@" for its leading
// NUL and any other).
type unixListener struct {
	inode uint64
	path  []byte
}

// Constants of include/uapi/linux/unix_diag.h. A listening unix socket
// reports the TCP_LISTEN state (net/unix/af_unix.c, unix_listen).
const (
	udiagShowName  = 1 << 0
	unixDiagName   = 0
	unixDiagMsgLen = 16 // struct unix_diag_msg
)

// unixDiagReq is struct unix_diag_req: every listening socket, with its
// name.
type unixDiagReq struct{}

func (unixDiagReq) Len() int { return 24 }

func (unixDiagReq) Serialize() []byte {
	b := make([]byte, 24)
	b[0] = unix.AF_UNIX                                  // sdiag_family
	binary.NativeEndian.PutUint32(b[4:], 1<<tcpListen)   // udiag_states
	binary.NativeEndian.PutUint32(b[12:], udiagShowName) // udiag_show
	binary.NativeEndian.PutUint32(b[16:], ^uint32(0))    // udiag_cookie: none
	binary.NativeEndian.PutUint32(b[20:], ^uint32(0))
	return b
}

// unixListenersDiag asks the kernel for the listening unix sockets of the
// network namespace of pid (sandtop's own when pid is 0) and of
// /proc, the only procfs whose namespaces it can enter. An error means
// the kernel could not be asked: the caller reads the text instead.
func unixListenersDiag(procRoot string, pid int) ([]unixListener, error) {
	if procRoot != "/proc" {
		return nil, errors.New("sock_diag answers for the running kernel's own /proc only")
	}
	sock, err := diagSocket(pid)
	if err != nil {
		return nil, err
	}
	defer sock.Close()
	for try := 0; ; try++ {
		req := nl.NewNetlinkRequest(nl.SOCK_DIAG_BY_FAMILY, unix.NLM_F_DUMP)
		req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_SOCK_DIAG: {Socket: sock}}
		req.AddData(unixDiagReq{})
		msgs, err := req.Execute(unix.NETLINK_SOCK_DIAG, nl.SOCK_DIAG_BY_FAMILY)
		if errors.Is(err, nl.ErrDumpInterrupted) && try < 2 {
			continue // the table changed under the dump: ask again
		}
		if err != nil {
			return nil, fmt.Errorf("sock_diag of unix sockets: %w", err)
		}
		return parseUnixDiag(msgs)
	}
}

// diagSocket opens a NETLINK_SOCK_DIAG socket in pid's network namespace,
// or sandtop's own when pid is 0 or in the same one.
func diagSocket(pid int) (*nl.NetlinkSocket, error) {
	target := netns.None()
	if pid > 0 {
		var own, their unix.Stat_t
		path := filepath.Join("/proc", strconv.Itoa(pid), "ns", "net")
		if err := unix.Stat(path, &their); err != nil {
			return nil, &os.PathError{Op: "stat", Path: path, Err: err}
		}
		if err := unix.Stat("/proc/self/ns/net", &own); err != nil || own.Ino != their.Ino || own.Dev != their.Dev {
			ns, err := netns.GetFromPath(path)
			if err != nil {
				return nil, fmt.Errorf("network namespace of pid %d: %w", pid, err)
			}
			defer ns.Close()
			target = ns
		}
	}
	sock, err := nl.GetNetlinkSocketAt(target, netns.None(), unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag socket: %w", err)
	}
	// The kernel answers a dump at once; a scan never hangs on one that
	// does not.
	_ = sock.SetSendTimeout(&diagTimeout)
	_ = sock.SetReceiveTimeout(&diagTimeout)
	return sock, nil
}

var diagTimeout = unix.Timeval{Sec: 5}

// parseUnixDiag reads the records of a unix sock_diag dump. A record the
// kernel cut short is an error, never a listener left out.
func parseUnixDiag(msgs [][]byte) ([]unixListener, error) {
	var out []unixListener
	for _, m := range msgs {
		if len(m) < unixDiagMsgLen {
			return nil, fmt.Errorf("sock_diag record of %d bytes", len(m))
		}
		if m[0] != unix.AF_UNIX || m[2] != tcpListen {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[unixDiagMsgLen:])
		if err != nil {
			return nil, fmt.Errorf("sock_diag attributes: %w", err)
		}
		for _, a := range attrs {
			if a.Attr.Type == unixDiagName && len(a.Value) > 0 {
				out = append(out, unixListener{inode: uint64(binary.NativeEndian.Uint32(m[4:8])), path: procName(a.Value)})
			}
		}
	}
	return out, nil
}

// procName writes a bound name as /proc/net/unix prints it
// (net/unix/af_unix.c, unix_seq_show): a path without the terminating
// NUL its length counts, an abstract name whole; either with "@" for
// each NUL.
func procName(name []byte) []byte {
	if name[0] != 0 {
		name = name[:len(name)-1]
	}
	out := make([]byte, len(name))
	for i, c := range name {
		if c == 0 {
			c = '@'
		}
		out[i] = c
	}
	return out
}
