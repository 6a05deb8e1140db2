package format

import "github.com/sandtop/sandtop/model"

// Printable is model.Printable, the one escaping of text a process
// controls, under the name the screen's code calls it by.
func Printable(s string) string { return model.Printable(s) }
