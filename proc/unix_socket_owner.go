package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ListeningUnixSockets returns the paths of the unix sockets process pid
// listens on: the descriptors in <procRoot>/<pid>/fd that are sockets
// ("socket:[inode]", proc(5)) whose inode is a listening socket of
// <procRoot>/<pid>/net/unix, the table of the process's own network
// namespace. What a sandbox's supervisor is known by is the socket path
// its shim was given; this says which process that is. It reads one
// process's descriptors, so it is for a target about to be planned, not for
// every scan. A process that is gone or whose descriptors cannot be read
// (another user's, without root) is an error.
func ListeningUnixSockets(procRoot string, pid int) ([]string, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return nil, fmt.Errorf("sockets of pid %d: %w", pid, err)
	}
	var inodes []string
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // closed since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("sockets of pid %d: %w", pid, err)
		}
		if ino, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes = append(inodes, strings.TrimSuffix(ino, "]"))
		}
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	var out []string
	text := func() ([]byte, error) { return os.ReadFile(filepath.Join(dir, "net", "unix")) }
	err = eachUnixListenerOf(procRoot, pid, text, func(inode, path []byte) {
		if slices.Contains(inodes, string(inode)) {
			out = append(out, string(path))
		}
	})
	if err != nil {
		return nil, fmt.Errorf("unix sockets of pid %d: %w", pid, err)
	}
	return out, nil
}
