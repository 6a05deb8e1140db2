package proc

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
)

// Listener is a listening socket of a network namespace: TCP in LISTEN,
// UDP bound with no peer (ss's UNCONN), unix stream or seqpacket with
// SO_ACCEPTCON.
type Listener struct {
	// Proto is "tcp", "tcp6", "udp", "udp6" or "unix".
	Proto string
	// Addr is "127.0.0.1:8080", "[::]:53", or a unix socket's path
	// ("@name" for an abstract one). A path is what a process chose:
	// print it only through a sanitiser.
	Addr  string
	Inode uint64
}

// NetNS is one network namespace as a process in it sees it.
type NetNS struct {
	Ino uint64
	// Name is what `ip netns` calls it (a bind mount of it under
	// NetnsDirs), "" when nothing does.
	Name string
	// Host is set for the namespace of PID 1 (sandtop's own when PID 1's
	// cannot be read): the host's, whose listeners are nobody's in
	// particular and are not read.
	Host bool
	// Listeners are the namespace's, sorted by protocol and address;
	// Err says why some could not be read ("" when all were).
	Listeners []Listener
	Err       string
}

// netFiles are the socket tables of a network namespace, per protocol.
var netFiles = []string{"tcp", "tcp6", "udp", "udp6", "unix"}

// maxNetTable bounds one socket table read: about 150 bytes a socket.
const maxNetTable = 64 << 20

// NetworkReader reads the network namespaces of processes, one process
// per namespace: the socket tables under /proc/PID/net are the
// namespace's, whichever of its processes they are read through.
type NetworkReader struct {
	procRoot string
	dirs     []string
	buf      []byte
}

// NewNetworkReader reads under procRoot ("" for /proc), naming
// namespaces from the bind mounts in NetnsDirs.
func NewNetworkReader(procRoot string) *NetworkReader {
	if procRoot == "" {
		procRoot = "/proc"
	}
	return &NetworkReader{procRoot: procRoot, dirs: NetnsDirs, buf: make([]byte, 16<<10)}
}

// Read fills snap's NetnsOf with the namespace of each of pids, and its
// Networks with each namespace's listeners, read through the first of
// pids found in it. A process that cannot be read (exited, a kernel
// thread) is left out.
func (r *NetworkReader) Read(snap *Snapshot, pids []int) {
	if len(pids) == 0 {
		return
	}
	snap.NetnsOf = make(map[int]uint64, len(pids))
	snap.Networks = map[uint64]*NetNS{}
	// The host's namespace is PID 1's; where that cannot be read (a
	// PID 1 that is not dumpable, as some VM agents are not), sandtop's
	// own, which is the host's unless sandtop runs in a container.
	host := nsInode(filepath.Join(r.procRoot, "1", "ns", "net"))
	if host == 0 {
		host = nsInode(filepath.Join(r.procRoot, "self", "ns", "net"))
	}
	var names map[uint64]string
	for _, pid := range pids {
		ino := nsInode(filepath.Join(r.procRoot, strconv.Itoa(pid), "ns", "net"))
		if ino == 0 {
			continue
		}
		snap.NetnsOf[pid] = ino
		if snap.Networks[ino] != nil {
			continue
		}
		if names == nil {
			names = r.names()
		}
		n := &NetNS{Ino: ino, Name: names[ino], Host: ino == host}
		if !n.Host {
			n.Listeners, n.Err = r.listeners(pid)
		}
		snap.Networks[ino] = n
	}
}

// names maps the inodes of the named namespaces to their names.
func (r *NetworkReader) names() map[uint64]string {
	names := map[uint64]string{}
	ents, _ := ListNetns(r.dirs, func(string) bool { return true }, Namespaces{})
	for _, e := range ents {
		if e.Ino != 0 {
			names[e.Ino] = e.Name
		}
	}
	return names
}

// listeners reads the socket tables of pid's namespace.
func (r *NetworkReader) listeners(pid int) ([]Listener, string) {
	var out []Listener
	var errs []string
	dir := filepath.Join(r.procRoot, strconv.Itoa(pid), "net")
	for _, proto := range netFiles {
		text := func() ([]byte, error) { return readFileInto(filepath.Join(dir, proto), &r.buf, maxNetTable, false) }
		var err error
		if proto == "unix" {
			err = eachUnixListenerOf(r.procRoot, pid, text, func(inode, path []byte) {
				ino, _ := strconv.ParseUint(string(inode), 10, 64)
				out = append(out, Listener{Proto: proto, Addr: string(path), Inode: ino})
			})
		} else {
			var data []byte
			if data, err = text(); err == nil {
				out, err = appendIPListeners(out, proto, data)
			} else if proto == "tcp6" || proto == "udp6" {
				continue // a kernel without IPv6 has no tcp6 nor udp6
			}
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", proto, err))
		}
	}
	sortListeners(out)
	if len(errs) > 0 {
		return out, fmt.Sprint(errs)
	}
	return out, ""
}

// TCP states (include/net/tcp_states.h): a listening TCP socket is
// LISTEN; a UDP socket bound with no peer shows CLOSE.
const (
	tcpListen = 0x0a
	tcpClose  = 0x07
)

// appendIPListeners parses a /proc/net/{tcp,udp}{,6} table (proc(5)):
//
//	sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
//	 0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 20393 ...
//
// and appends its listening sockets. procfs parses these tables too, but
// through the deprecated NetTCP and with an error for the whole table on
// one odd line; this keeps the good lines.
func appendIPListeners(out []Listener, proto string, data []byte) ([]Listener, error) {
	_, rest, _ := bytes.Cut(data, []byte("\n"))
	udp := proto == "udp" || proto == "udp6"
	var bad int
	for line := range bytes.SplitSeq(rest, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 10 {
			bad++
			continue
		}
		st, err := strconv.ParseUint(string(f[3]), 16, 8)
		if err != nil {
			bad++
			continue
		}
		remote, err := parseSockAddr(f[2])
		if err != nil {
			bad++
			continue
		}
		if (!udp && st != tcpListen) || (udp && (st != tcpClose || remote.Port() != 0)) {
			continue
		}
		local, err := parseSockAddr(f[1])
		if err != nil {
			bad++
			continue
		}
		ino, _ := strconv.ParseUint(string(f[9]), 10, 64)
		out = append(out, Listener{Proto: proto, Addr: local.String(), Inode: ino})
	}
	if bad > 0 {
		return out, fmt.Errorf("%d lines not understood", bad)
	}
	return out, nil
}

// parseSockAddr parses "0100007F:1F90" (IPv4) or 32 hex digits and a
// port (IPv6): the address as the kernel stores it, each 32-bit word in
// host order, the port in hex.
func parseSockAddr(b []byte) (netip.AddrPort, error) {
	h, p, ok := bytes.Cut(b, []byte(":"))
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("address %q", b)
	}
	port, err := strconv.ParseUint(string(p), 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q", p)
	}
	raw := make([]byte, len(h)/2)
	if _, err := hex.Decode(raw, h); err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("address %q", h)
	}
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

func sortListeners(ls []Listener) {
	slices.SortFunc(ls, func(a, b Listener) int {
		return cmp.Or(cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.Addr, b.Addr), cmp.Compare(a.Inode, b.Inode))
	})
}
