package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Namespaces maps the network and mount namespaces of the host's
// processes to their members, by the namespace's inode
// (/proc/PID/ns/{net,mnt} read as "net:[INODE]", namespaces(7)).
type Namespaces struct {
	Net, Mnt map[uint64][]int
	// SelfNet and SelfMnt are the reader's own; InitNet and InitMnt
	// PID 1's (0 when unreadable): the host's own namespaces.
	SelfNet, SelfMnt, InitNet, InitMnt uint64
}

// ReadNamespaces reads the namespaces of every process under procRoot. A
// process that exits while it is read is left out.
func ReadNamespaces(procRoot string) (Namespaces, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	ns := Namespaces{Net: map[uint64][]int{}, Mnt: map[uint64][]int{}}
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return ns, fmt.Errorf("read namespaces: %w", err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(procRoot, e.Name(), "ns")
		if ino := nsInode(filepath.Join(dir, "net")); ino != 0 {
			ns.Net[ino] = append(ns.Net[ino], pid)
		}
		if ino := nsInode(filepath.Join(dir, "mnt")); ino != 0 {
			ns.Mnt[ino] = append(ns.Mnt[ino], pid)
		}
	}
	for _, m := range []map[uint64][]int{ns.Net, ns.Mnt} {
		for _, pids := range m {
			slices.Sort(pids)
		}
	}
	ns.SelfNet, ns.SelfMnt = nsInode(filepath.Join(procRoot, "self/ns/net")), nsInode(filepath.Join(procRoot, "self/ns/mnt"))
	ns.InitNet, ns.InitMnt = nsInode(filepath.Join(procRoot, "1/ns/net")), nsInode(filepath.Join(procRoot, "1/ns/mnt"))
	return ns, nil
}

// NSInode is the inode of the namespace a /proc/PID/ns/* link names, 0
// when unreadable.
func NSInode(link string) uint64 { return nsInode(link) }

func nsInode(link string) uint64 {
	t, err := os.Readlink(link)
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(t, ":[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// Host reports whether ino is the reader's or PID 1's namespace (net or
// mnt).
func (ns Namespaces) Host(ino uint64) bool {
	return ino != 0 && (ino == ns.SelfNet || ino == ns.InitNet || ino == ns.SelfMnt || ino == ns.InitMnt)
}
