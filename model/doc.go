// Package model turns what proc read from the host into sandboxes: a
// snapshot and rules in, a View out (sandbox IDs, runtimes, roots,
// supervisors, cgroups, badges, members), kept sticky across refreshes by
// a Builder. It also parses and writes rules files and holds the presets.
//
// model does no I/O: it reads no file, no environment and no clock, and
// signals nothing. Rules arrive as bytes (ParseRules) and snapshots as
// values, so every grouping and badge rule is a table test; finding and
// reading the rules file is the command's job (cmd/sandtop).
package model
