package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// LinkEntry is one network device.
type LinkEntry struct {
	Name  string
	Index int
	// Type is netlink's name for the device's kind: "tuntap", "veth",
	// "bridge", "device" (a physical one), …
	Type string
	// Netns is the path of the named network namespace the device lives
	// in, "" for the reader's own.
	Netns string
	// Holders are processes with the device open (a tap's /dev/net/tun
	// file).
	Holders []int
}

// ListLinks lists the devices whose name want accepts in the reader's
// network namespace and in each named namespace of netnsPaths, with the
// processes that hold each open (taps, from holders).
func ListLinks(netnsPaths []string, want func(name string) bool, holders map[string][]int) ([]LinkEntry, error) {
	var out []LinkEntry
	var errs []error
	add := func(h *netlink.Handle, nsPath string) {
		links, err := h.LinkList()
		if err != nil {
			errs = append(errs, fmt.Errorf("list links in %s: %w", nsLabel(nsPath), err))
			return
		}
		for _, l := range links {
			a := l.Attrs()
			if !want(a.Name) {
				continue
			}
			out = append(out, LinkEntry{Name: a.Name, Index: a.Index, Type: l.Type(), Netns: nsPath, Holders: slices.Clone(holders[a.Name])})
		}
	}
	h, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	add(h, "")
	h.Close()
	for _, p := range netnsPaths {
		h, err := LinkHandleAt(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		add(h, p)
		h.Close()
	}
	return out, errors.Join(errs...)
}

// LinkHandleAt opens a netlink socket in the named network namespace at
// path ("" for the reader's own).
func LinkHandleAt(path string) (*netlink.Handle, error) {
	if path == "" {
		return netlink.NewHandle()
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", path, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", path, err)
	}
	return h, nil
}

func nsLabel(p string) string {
	if p == "" {
		return "the host's network namespace"
	}
	return p
}

// TapHolders maps each tun/tap device name to the processes that have it
// open: a /dev/net/tun file whose fdinfo names the device ("iff:\tNAME",
// drivers/net/tun.c tun_chr_show_fdinfo).
func TapHolders(procRoot string) map[string][]int {
	if procRoot == "" {
		procRoot = "/proc"
	}
	out := map[string][]int{}
	ents, _ := os.ReadDir(procRoot)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		fdDir := filepath.Join(procRoot, e.Name(), "fd")
		fds, _ := os.ReadDir(fdDir)
		for _, fd := range fds {
			t, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || t != "/dev/net/tun" {
				continue
			}
			info, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "fdinfo", fd.Name()))
			if err != nil {
				continue
			}
			if name := tunIff(info); name != "" && !slices.Contains(out[name], pid) {
				out[name] = append(out[name], pid)
			}
		}
	}
	return out
}

// tunIff is the device a tun file's fdinfo names, "" when none is
// attached.
func tunIff(info []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("iff:")); ok {
			return string(bytes.TrimSpace(v))
		}
	}
	return ""
}
