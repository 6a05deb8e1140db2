// Package hostview turns a scan of the host into the view every front end
// shows: the model's sandboxes, plus the sandboxes that left things behind.
package hostview

import (
	"errors"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// WithLeftovers adds to v the sandboxes with no process left that still
// hold directories, sockets or cgroups: the finder says where to look,
// proc looks, and the finder decides. What could not be read is returned
// as an error beside the view, which is complete for everything else (a
// user who cannot read /run/vm0 still sees the rest).
func WithLeftovers(f *model.Leftovers, v *model.View) (*model.View, error) {
	globs, paths, gerr := globLeftovers(f, v)
	var cgroups []proc.CgroupDir
	var cerr error
	if len(f.CgroupRules()) > 0 {
		cgroups, cerr = proc.ListCgroups(v.Snapshot.Mounts, f.WantCgroup)
	}
	return f.Apply(v, model.Found{Globs: globs, Paths: paths, Cgroups: cgroups}), errors.Join(gerr, cerr)
}

// globLeftovers looks for the paths the finder's rules leave behind.
func globLeftovers(f *model.Leftovers, v *model.View) ([]model.Glob, []proc.PathEntry, error) {
	globs := f.Globs(v)
	patterns := make([]string, len(globs))
	for i, g := range globs {
		patterns[i] = g.Pattern
	}
	paths, err := proc.Glob(patterns)
	return globs, paths, err
}
