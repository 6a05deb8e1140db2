// Package modeltest is test support, imported only by tests: hand-built
// processes and snapshots, the input of model.Build, for the table tests
// of model, ui and teardown. Nothing in a sandtop binary imports it.
//
// It builds proc values and imports nothing else of sandtop, so that
// package model's own tests can use it.
package modeltest

import (
	"slices"
	"strings"

	"github.com/sandtop/sandtop/proc"
)

// Opt sets a field of a fixture process.
type Opt func(*proc.Process)

// Proc builds a process: its own process group and session, state S,
// argv split on spaces with comm its first word's base name, then the
// options in order (an option sees the argv).
func Proc(pid, ppid int, argv string, opts ...Opt) *proc.Process {
	p := &proc.Process{PID: pid, PPID: ppid, PGID: pid, SID: pid, State: 'S'}
	if argv != "" {
		p.Argv = strings.Split(argv, " ")
		p.Comm = p.Argv[0][strings.LastIndexByte(p.Argv[0], '/')+1:]
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Snapshot returns s holding procs, sorted by pid; of processes with the
// same pid, the last given stands (a test replaces a base's PID 1 so).
// Its other fields are s's.
func Snapshot(s proc.Snapshot, procs ...*proc.Process) *proc.Snapshot {
	s.Procs = slices.Clone(procs)
	slices.Reverse(s.Procs)
	slices.SortStableFunc(s.Procs, func(a, b *proc.Process) int { return a.PID - b.PID })
	s.Procs = slices.CompactFunc(s.Procs, func(a, b *proc.Process) bool { return a.PID == b.PID })
	return &s
}

// The options each set one field (Zombie and Stopped the state, and what
// goes with it).

func PGID(g int) Opt       { return func(p *proc.Process) { p.PGID = g } }
func State(s byte) Opt     { return func(p *proc.Process) { p.State = s } }
func Cgroup(c string) Opt  { return func(p *proc.Process) { p.Cgroup = c } }
func Freezer(c string) Opt { return func(p *proc.Process) { p.Freezer = c } }
func Cwd(c string) Opt     { return func(p *proc.Process) { p.Cwd = c } }
func Start(s uint64) Opt   { return func(p *proc.Process) { p.Start = s } }
func UID(u int) Opt        { return func(p *proc.Process) { p.UID = u } }
func Ticks(t uint64) Opt   { return func(p *proc.Process) { p.CPUTicks = t } }
func NSpid(ns ...int) Opt  { return func(p *proc.Process) { p.NSpid = ns } }
func Kernel() Opt          { return func(p *proc.Process) { p.Kernel = true } }
func Stopped() Opt         { return func(p *proc.Process) { p.State = 'T' } }
func Zombie(comm string) Opt {
	return func(p *proc.Process) { p.State, p.Comm, p.Argv, p.RSS = 'Z', comm, nil, 0 }
}
