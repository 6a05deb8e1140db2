package proc

import (
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// A cgroup's usage_usec counts the CPU time of every task in it and below,
// and only grows: when a parent's did not move between two scan starts,
// none of its descendants' did either. So where many of the cgroups a
// scan follows share a parent (a runtime's k8s.io, machine.slice,
// kubepods), the parent's cpu.stat is read first, and while it is quiet
// its children's are not read at all: one read instead of hundreds on a
// host of idle containers. A child is taken as quiet this way only once
// it has a usage read at a scan's start (cpuFile.atStart), which then
// still holds. A busy parent's read is one more that saves none, so a
// parent is read first only with minParentOf followed cgroups below it.

// minParentOf is how many followed cgroups a parent must have below it to
// be read first.
const minParentOf = 4

// parentFile is a followed cgroup's ancestor whose cpu.stat is read first.
type parentFile struct {
	path   string
	depth  int
	fd     int
	usage  uint64
	atUsed bool // usage was read at a scan's start
	// quiet is this start's answer: it did not run since the last.
	quiet bool
	// above are the parents followed above this one.
	above []*parentFile
}

// regroup picks the parents worth reading first from the cgroups
// followed, opening the new ones and closing the rest, and gives every
// followed cgroup its list of them.
func (c *cgroupCPU) regroup() {
	c.dirty = false
	below := map[string]int{}
	for p, f := range c.files {
		if f.fd < 0 {
			continue
		}
		for a := path.Dir(p); a != "/" && a != "." && a != ""; a = path.Dir(a) {
			below[a]++
		}
	}
	keep := map[string]*parentFile{}
	for a, n := range below {
		if n < minParentOf {
			continue
		}
		if g := c.parents[a]; g != nil {
			keep[a] = g
			continue
		}
		dir := c.dirOf(a)
		if dir == "" || !c.fds.take() {
			continue
		}
		fd, err := openCgroup2(filepath.Join(dir, "cpu.stat"))
		if err != nil {
			c.fds.held.Add(-1)
			continue
		}
		keep[a] = &parentFile{path: a, depth: strings.Count(a, "/"), fd: fd}
	}
	for a, g := range c.parents {
		if keep[a] == nil {
			closeFD(g.fd)
			c.fds.held.Add(-1)
		}
	}
	c.parents = keep
	c.order = c.order[:0]
	for _, g := range keep {
		c.order = append(c.order, g)
	}
	// Shallow first, so that a parent's answer is known before its
	// children's are asked.
	slices.SortFunc(c.order, func(a, b *parentFile) int { return a.depth - b.depth })
	for _, g := range c.order {
		g.above = c.parentsOf(g.path, g.above[:0])
	}
	for p, f := range c.files {
		f.parents = c.parentsOf(p, f.parents[:0])
	}
}

// parentsOf appends the parents followed above the cgroup p.
func (c *cgroupCPU) parentsOf(p string, out []*parentFile) []*parentFile {
	for a := path.Dir(p); a != "/" && a != "." && a != ""; a = path.Dir(a) {
		if g := c.parents[a]; g != nil {
			out = append(out, g)
		}
	}
	return out
}

// startParents reads the parents' usage, shallow first, skipping those
// under a quiet one, and sets each one's quiet.
func (c *cgroupCPU) startParents() {
	for _, g := range c.order {
		if g.fd < 0 {
			g.quiet = false
			continue
		}
		if underQuiet(g.above) {
			g.quiet = true
			continue
		}
		u, ok := c.usage(g.fd)
		c.usageReads++
		if !ok {
			// Removed (a cgroup made again under the name is a new
			// node): closed now, and opened afresh by the next regroup
			// if cgroups are still followed below it.
			closeFD(g.fd)
			c.fds.held.Add(-1)
			delete(c.parents, g.path)
			g.fd, g.quiet, g.atUsed = -1, false, false
			c.dirty = true
			continue
		}
		g.quiet = g.atUsed && u == g.usage
		g.usage, g.atUsed = u, true
	}
}

// underQuiet reports whether one of the parents did not run.
func underQuiet(parents []*parentFile) bool {
	for _, g := range parents {
		if g.quiet {
			return true
		}
	}
	return false
}

func (c *cgroupCPU) closeParents() {
	for _, g := range c.parents {
		closeFD(g.fd)
		c.fds.held.Add(-1)
	}
	c.parents, c.order = nil, nil
}
