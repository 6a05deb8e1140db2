package proc

import "time"

// scanCache remembers the static fields of every process a scanner has seen,
// keyed by identity, so a refresh reads only /proc/PID/stat for a known
// process (plus the readdir of /proc that finds births and deaths).
//
// What the cache assumes, and what breaks the assumption:
//
//   - execve keeps the pid and the start time but replaces argv, exe and
//     comm, so the identity alone cannot tell the new program from the old.
//     stat, read anyway, carries two signs of an exec: comm (set from the
//     new file name), and startcode (stat field 26), the address of the new
//     program's text, which ASLR moves on every exec of a PIE binary. Either
//     changing drops the entry. Comm alone misses the common fork-then-exec
//     of a same-named program (bash running bash, a runner re-executing
//     itself), seen by a scan that catches the child between fork and exec.
//     startcode reads 0 once the process has no memory (a zombie, exiting),
//     which is no exec; and the kernel shows 1 to a reader without ptrace
//     access (proc(5)), so unprivileged scans rely on comm alone. An exec
//     that changes neither (same comm, non-PIE binary or ASLR off) goes
//     unnoticed until the process exits. prctl(PR_SET_NAME) changes comm
//     without an exec; that costs one needless re-read.
//   - execve is not atomic to a reader. begin_new_exec sets the new comm
//     and memory map, and only then does the binary loader lay out argv
//     (create_elf_tables) and set startcode: a read in between sees the new
//     comm, startcode 0 and an empty cmdline, and caches them. The next
//     scan sees the same comm, and a startcode that moved from 0 (or, for
//     an unprivileged reader, reads 1 both times), so neither sign fires.
//     An empty argv from a live process that is no kernel thread is
//     therefore read again on each scan (one small read; a process whose
//     argv stays empty is rare) until arguments appear, which drops the
//     entry like an exec. Seen for real: a steady scanner that never
//     recognised a QEMU caught mid-exec.
//   - A process can be migrated to another cgroup (a write to cgroup.procs)
//     without any trace in stat. Re-reading /proc/PID/cgroup on every refresh
//     would double the files read per process, so it is not done: whoever
//     migrates a process (teardown, tests) calls Scanner.Invalidate for it.
//     A process moved out of a cgroup whose stats a refresh reuses is
//     noticed there (cgroup_cpu.go reads that cgroup's cgroup.procs); one
//     moved out of a busy cgroup shows once that cgroup falls quiet.
//   - cwd changes freely (chdir) and is shown as of the first read.
//   - A zombie keeps its cached argv, exe and cwd, although its own /proc
//     files are empty by then: the model still attributes it to its sandbox
//     by them, which is what makes a zombie badge possible.
//   - Partial entries (permission errors) are kept like any other: retrying
//     them every refresh would cost the most exactly when the scan cannot
//     succeed.
type scanCache struct {
	entries map[Identity]*cacheEntry
}

type cacheEntry struct {
	// proc is the Process the last scan handed out for this identity, or
	// made for it: it holds the static fields (argv, exe, cwd, uid,
	// cgroup, freezer, nspid), and the stat they go with. The next scan
	// hands out the same pointer when stat shows nothing new (see
	// sameStat), so an idle process costs no allocation, and a changed one
	// a copy with the new stat; a Process is never written once handed
	// out, which is what lets snapshots share it. Keeping the static
	// fields there rather than in a copy of their own saves some 140
	// bytes of heap per process, 1.4 MB at 10,000.
	proc *Process
	// startCode (stat field 26) as of the read, to notice an execve (see
	// scanCache.lookup); comm is proc's.
	startCode uint64
	// gen is the last scan generation that saw this identity.
	gen uint64
	// seeded marks an entry Seed made with fields unread: the next scan
	// asks its own Need whether to read them (see Scanner.readStatics).
	seeded bool
	// young marks an entry made for a process first seen within
	// youngAge of its start: its cgroup is read again on its next scan,
	// since runtimes move what they start into its cgroup right after
	// fork, and a read before the move would cache the wrong one.
	young bool
	// argvLate marks an argv read empty from a live process that is no
	// kernel thread: most likely one caught inside execve (see
	// scanCache.lookup), so each scan reads cmdline again until it is not.
	argvLate bool
	// dropped marks an entry the cache no longer holds (the process
	// exited, moved or exec'd): a pid slot that still points at it
	// (pidSlot.entry) must look its identity up again.
	dropped bool
}

// setStatic replaces the static fields of the entry's Process, their
// strings interned in in: with a copy, since the Process may have been
// handed out.
func (e *cacheEntry) setStatic(sf *static, in *interner) {
	p := *e.proc
	setStatic(&p, sf)
	in.internProcess(&p)
	e.proc = &p
}

// youngAge is how soon after its start a process must be first seen for
// its cgroup to be read again on the next scan (cacheEntry.young).
const youngAge = 5 * time.Second

func newScanCache() scanCache {
	return scanCache{entries: map[Identity]*cacheEntry{}}
}

// entry returns the entry for id: hint when it is that entry still (the
// one a pid slot kept from the last scan, which spares the map a lookup
// per process), else the cache's, or nil.
func (c *scanCache) entry(id Identity, hint *cacheEntry) *cacheEntry {
	if hint != nil && !hint.dropped && hint.proc.PID == id.PID && hint.proc.Start == id.Start {
		return hint
	}
	return c.entries[id]
}

// lookup returns the entry for id (see entry for hint), or nil when there
// is none or when comm or startCode show the process has exec'd since the
// entry was made.
func (c *scanCache) lookup(id Identity, hint *cacheEntry, comm string, startCode uint64) *cacheEntry {
	e := c.entry(id, hint)
	if e == nil || e.proc.Comm != comm {
		return nil
	}
	if startCode != 0 && e.startCode != 0 && startCode != e.startCode {
		return nil
	}
	return e
}

// reserve makes room for n new entries at once when the cache is empty (a
// cold scan), instead of growing the map through every doubling.
func (c *scanCache) reserve(n int) {
	if len(c.entries) == 0 && n > 64 {
		c.entries = make(map[Identity]*cacheEntry, n)
	}
}

func (c *scanCache) store(id Identity, e *cacheEntry) {
	if old := c.entries[id]; old != nil && old != e {
		old.dropped = true
	}
	c.entries[id] = e
}

// sweep drops the identities not seen in scan generation gen: they exited.
func (c *scanCache) sweep(gen uint64) {
	for id, e := range c.entries {
		if e.gen != gen {
			e.dropped = true
			delete(c.entries, id)
		}
	}
}

func (c *scanCache) drop(id Identity) {
	if e := c.entries[id]; e != nil {
		e.dropped = true
		delete(c.entries, id)
	}
}

func (c *scanCache) len() int { return len(c.entries) }
