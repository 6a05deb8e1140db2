// Package hostview turns a scan of the host into the view every front end
// shows: the model's sandboxes, plus the sandboxes that left things behind.
package hostview

import (
	"github.com/sandtop/sandtop/model"
)

// WithLeftovers adds to v the sandboxes with no process left that still
// hold directories, sockets or cgroups: the finder says where to look,
// proc looks, and the finder decides. What could not be read is returned
// as an error beside the view, which is complete for everything else (a
// user who cannot read /run/vm0 still sees the rest).
func WithLeftovers(f *model.Leftovers, v *model.View) (*model.View, error) {
	return NewFinder(f, 0).Add(v) // a new Finder walks the cgroups at once
}
