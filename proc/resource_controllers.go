package proc

import (
	"bytes"
	"path/filepath"
)

// A v2 controller's interface files (memory.*, io.stat, pids.*, cpu.max)
// exist in a cgroup only while its parent enables the controller in its
// cgroup.subtree_control, the set the cgroup's own cgroup.controllers
// lists (Documentation/admin-guide/cgroup-v2.rst, "Enabling and
// Disabling"). The core files (cpu.stat, and the pressure files, there
// whenever the kernel has PSI) are in every cgroup. Where a parent enables
// none, as on a hybrid host whose v1 hierarchies hold the controllers, or
// under a manager that delegates none, every sandbox's controller files
// are missing, and trying each again one Read in reuseRounds was a failing
// openat per file: about 110 a second on a fleet of 1,000 sandboxes.
//
// So a controller file that is not held open is opened only when the
// parent's cgroup.subtree_control names its controller. Sandboxes share
// parents (a runtime's 500 scopes under system.slice), and the parent's
// file is read at most once a Read, however many of its children ask. It
// is held open and read with pread like the cgroups' own files while a
// child lacks a controller file it is asked for, and closed once none
// does: where every controller is enabled, a parent is read when a new
// child's files are first opened, and not held after. A controller
// enabled later shows at its files' next retry, within reuseRounds
// Reads. A parent out of sight (a cgroup at the root of a
// subtree's mount) or unreadable leaves the files tried as before, and so
// does a threaded cgroup, which lacks the domain controllers (memory, io)
// its parent enables.

// controller is a set of v2 controllers, as cgroup.subtree_control
// names them.
type controller uint8

const (
	ctlCPU controller = 1 << iota
	ctlIO
	ctlMemory
	ctlPIDs
)

// parseControllers parses cgroup.subtree_control (or cgroup.controllers):
// controller names separated by spaces. Names sandtop reads no files of
// (cpuset, hugetlb, rdma, misc) are left out.
func parseControllers(data []byte) controller {
	var on controller
	for name := range bytes.FieldsSeq(data) {
		switch string(name) {
		case "cpu":
			on |= ctlCPU
		case "io":
			on |= ctlIO
		case "memory":
			on |= ctlMemory
		case "pids":
			on |= ctlPIDs
		}
	}
	return on
}

// controllerFiles marks the resFiles that are a v2 controller's.
var controllerFiles = func() uint32 {
	var m uint32
	for f, n := range fileNames {
		if n.ctl != 0 {
			m |= 1 << f
		}
	}
	return m
}()

// heldParent is the cgroup.subtree_control of a parent of the cgroups
// read.
type heldParent struct {
	fd int // -1 when not held
	// gen is the Read that last read it; on is what it said, known
	// whether it could be read.
	gen   uint64
	on    controller
	known bool
	// users counts the held cgroups that refer to it (heldCgroup.par).
	users int
}

// parentDir returns the directory of the parent of the v2 cgroup whose
// directory is dir, or "" when it is the mount's root and its parent
// cannot be seen.
func (r *ResourceReader) parentDir(dir string) string {
	if dir == "" || dir == filepath.Clean(r.mounts.Unified) {
		return ""
	}
	return filepath.Dir(dir)
}

// mayExist reports whether file f of h can be there: false only for the
// file of a v2 controller that h's parent is known not to enable.
func (r *ResourceReader) mayExist(h *heldCgroup, f resFile) bool {
	ctl := fileNames[f].ctl
	if ctl == 0 || h.parent == "" {
		return true
	}
	if h.par == nil {
		h.par = r.parents[h.parent]
		if h.par == nil {
			h.par = &heldParent{fd: -1}
			r.parents[h.parent] = h.par
		}
		h.par.users++
	}
	p := h.par
	if p.gen != r.gen {
		r.readParent(h.parent, p)
	}
	return !p.known || p.on&ctl != 0
}

// keepParent lets go of h's parent once h lacks no controller file it
// was asked for this Read: it will not be asked again until a file is
// opened anew.
func (r *ResourceReader) keepParent(h *heldCgroup) {
	if h.par != nil && h.asked&h.missing&controllerFiles == 0 {
		h.par.users--
		h.par = nil
	}
}

// readParent reads the parent's cgroup.subtree_control, through its held
// descriptor when it has one.
func (r *ResourceReader) readParent(dir string, p *heldParent) {
	p.gen = r.gen
	r.parentReads++
	data, err := r.readHeld(&p.fd, filepath.Join(dir, "cgroup.subtree_control"), false)
	p.on, p.known = parseControllers(data), err == nil
}

// closeParent closes the parent's descriptor; a reader without a budget
// holds none (fdBudget.close returns before it would use one).
func (r *ResourceReader) closeParent(p *heldParent) { r.fds.close(&p.fd) }

// closeParents closes the parents no held cgroup refers to (all of them,
// with all).
func (r *ResourceReader) closeParents(all bool) {
	for dir, p := range r.parents {
		if all || p.users == 0 {
			r.closeParent(p)
			delete(r.parents, dir)
		}
	}
}
