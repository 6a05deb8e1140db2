package hostview

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// findKinds looks for the leftovers that are not plain paths: mounts,
// named network namespaces, network devices, cgroups by template, and
// whether something listens on each socket found. Each costs a read of
// every process (their namespaces, their tun files), so none is read
// unless a glob or a found entry asks for it.
func findKinds(found *model.Found, v *model.View) error {
	byKind := map[proc.PathKind][]model.Glob{}
	for _, g := range found.Globs {
		byKind[g.Kind] = append(byKind[g.Kind], g)
	}
	var dirs []string
	sockets := false
	for _, e := range found.Paths {
		switch e.Kind {
		case proc.KindDir:
			dirs = append(dirs, e.Path)
		case proc.KindSocket:
			sockets = true
		}
	}
	var errs []error
	needNS := len(byKind[proc.KindNetns]) > 0 || len(byKind[proc.KindLink]) > 0 || len(byKind[proc.KindMount]) > 0 || len(dirs) > 0 || sockets
	if !needNS && len(byKind[proc.KindCgroup]) == 0 {
		return nil
	}
	if needNS {
		ns, err := proc.ReadNamespaces("")
		if err != nil {
			return err
		}
		found.NS = ns
	}
	if sockets {
		found.Listeners = allListeners(found.NS)
	}
	if gs := byKind[proc.KindMount]; len(gs) > 0 || len(dirs) > 0 {
		want := func(point string) bool {
			for _, d := range dirs {
				if point == d || strings.HasPrefix(point, d+"/") {
					return true
				}
			}
			return anyMatch(gs, point)
		}
		m, err := proc.ListMounts("", withoutLive(found.NS, v), want)
		found.Mounts, errs = m, append(errs, err)
	}
	if gs := byKind[proc.KindNetns]; len(gs) > 0 {
		n, err := proc.ListNetns(proc.NetnsDirs, func(name string) bool { return anyMatch(gs, name) }, found.NS)
		found.Netns, errs = n, append(errs, err)
	}
	if gs := byKind[proc.KindLink]; len(gs) > 0 {
		// Devices are looked for in the host's namespace and in each
		// named namespace found: a tap moved into a VM's namespace dies
		// with it, but a veth's host end stays.
		var in []string
		for _, n := range found.Netns {
			if n.Ino != 0 && !found.NS.Host(n.Ino) {
				in = append(in, n.Path)
			}
		}
		l, err := proc.ListLinks(in, func(name string) bool { return anyMatch(gs, name) }, proc.TapHolders(""))
		found.Links, errs = l, append(errs, err)
	}
	if gs := byKind[proc.KindCgroup]; len(gs) > 0 {
		hs, err := proc.ReadHierarchies("")
		errs = append(errs, err)
		var pats []string
		for _, g := range gs {
			pats = append(pats, g.Pattern)
		}
		c, err := proc.GlobCgroups(hs, pats)
		found.CgroupPaths, errs = c, append(errs, err)
	}
	return errors.Join(errs...)
}

func anyMatch(gs []model.Glob, s string) bool {
	return slices.ContainsFunc(gs, func(g model.Glob) bool {
		ok, _ := filepath.Match(g.Pattern, s)
		return ok
	})
}

// allListeners are the listening unix sockets of every network namespace
// a process is in: /proc/net/unix shows only the reader's, and a VM's
// runtime in its own namespace (vm0 runs Firecracker under ip netns exec)
// listens out of its sight. nil when one could not be read.
func allListeners(ns proc.Namespaces) map[string]bool {
	out := map[string]bool{}
	for _, pids := range ns.Net {
		for _, pid := range pids {
			l, err := proc.UnixListenersOf("", pid)
			if errors.Is(err, fs.ErrNotExist) {
				continue // exited since: ask another of the namespace
			}
			if err != nil {
				return nil
			}
			for p := range l {
				out[p] = true
			}
			break
		}
	}
	return out
}

// withoutLive is ns without the mount namespaces a process of a live
// sandbox is in: a copy of a leftover mount there (a container that
// unshared its mounts after the leftover was made) is that sandbox's
// business, never the reaper's.
func withoutLive(ns proc.Namespaces, v *model.View) proc.Namespaces {
	live := map[int]bool{}
	for _, sb := range v.Sandboxes {
		for _, m := range sb.Members {
			live[m.Process.PID] = true
		}
	}
	out := ns
	out.Mnt = make(map[uint64][]int, len(ns.Mnt))
	for ino, pids := range ns.Mnt {
		if ino == ns.SelfMnt || !slices.ContainsFunc(pids, func(p int) bool { return live[p] }) {
			out.Mnt[ino] = pids
		}
	}
	return out
}
