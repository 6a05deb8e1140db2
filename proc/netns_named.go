package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// NetnsDirs are where iproute2 binds named network namespaces
// (ip-netns(8): /var/run/netns, a symbolic link to /run on most hosts).
var NetnsDirs = []string{"/run/netns", "/var/run/netns"}

// NetnsEntry is one named network namespace.
type NetnsEntry struct {
	Name, Path string
	// Ino is the namespace's inode, 0 when the name is a file with no
	// namespace bound on it (a delete that unmounted and did not unlink).
	Ino uint64
	// ModTime is the nsfs inode's: when the namespace was made.
	ModTime time.Time
	// Holders are the processes in the namespace.
	Holders []int
}

// ListNetns lists the named network namespaces in dirs whose name want
// accepts, each once (a directory reached twice through a symbolic link
// is read once), with the processes in each.
func ListNetns(dirs []string, want func(name string) bool, ns Namespaces) ([]NetnsEntry, error) {
	var out []NetnsEntry
	seen := map[string]bool{}
	var errs []error
	for _, d := range dirs {
		real, err := filepath.EvalSymlinks(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("netns dir %s: %w", d, err))
			continue
		}
		if seen[real] {
			continue
		}
		seen[real] = true
		ents, err := os.ReadDir(real)
		if err != nil {
			errs = append(errs, fmt.Errorf("netns dir %s: %w", d, err))
			continue
		}
		for _, e := range ents {
			if !want(e.Name()) {
				continue
			}
			p := filepath.Join(real, e.Name())
			n := NetnsEntry{Name: e.Name(), Path: p}
			var st unix.Stat_t
			if unix.Stat(p, &st) != nil {
				continue // gone since the listing
			}
			n.ModTime = time.Unix(st.Mtim.Unix())
			var sfs unix.Statfs_t
			if unix.Statfs(p, &sfs) == nil && sfs.Type == unix.NSFS_MAGIC {
				n.Ino = st.Ino
				n.Holders = slices.Clone(ns.Net[st.Ino])
			}
			out = append(out, n)
		}
	}
	return out, errors.Join(errs...)
}
