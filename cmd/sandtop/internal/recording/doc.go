// Package recording writes and reads sandtop recordings: a stream of host
// snapshots (processes, cgroup states, unix listeners) that `sandtop record`
// and the live screen's --record write, and that `sandtop replay` and
// `sandtop list --from` read back.
//
// # File format (version 2; version 1 is read too)
//
// All integers in the envelope are little-endian.
//
//	file     = preamble frame*
//	preamble = "SANDTREC" (8 bytes) version (uint32)
//	frame    = length (uint32) kind (1 byte) time (int64) payload crc (uint32)
//
// length is the size of payload; time is Unix nanoseconds (the snapshot's
// time; for the header frame, when recording started); crc is CRC-32C
// (Castagnoli) of length, kind, time and payload. payload is one zstd
// frame. A reader that finds a frame cut short, a CRC that does not match,
// or a payload it cannot decode stops there: every frame before it is
// still read. Frames never refer forward, so a file cut at any byte keeps
// every whole frame before the cut.
//
// Kinds:
//
//	'H' header, first and only once: JSON (see Header)
//	'K' key frame: a whole snapshot
//	'D' delta: what changed since the frame before it
//	'E' end: JSON {"frames": N, "stopped": reason}, written on a clean stop
//
// A key frame is written first and then every Header.KeyEvery; deltas in
// between. Decoding frame i needs the key frame before it and every delta
// from there to i.
//
// # Payloads of K and D frames (after zstd)
//
// uvarint and svarint are encoding/binary's varints (svarint zig-zag).
// A string is a uvarint index into the string table; the table starts
// with "" at index 0 at every key frame, and each frame first appends the
// strings it introduces:
//
//	frame    = strings host procs cgroups freezers listeners watch
//
// (version 1 has no watch)
//
//	strings  = uvarint count, then count × (uvarint length, bytes)
//	host     = string
//
// In a key frame:
//
//	procs    = uvarint count, then count × (uvarint pid-gap, process)
//	process  = uvarint start, ppid, pgid, sid; byte state; string comm;
//	           uvarint argc, argc × string; string exe, cwd; svarint uid;
//	           uvarint threads, rss (bytes), cpu ticks, flags;
//	           string cgroup, freezer; uvarint n, n × uvarint nspid;
//	           byte bits (1 kernel thread, 2 partial)
//	cgroups  = uvarint count, then count × (string path, byte state)
//	           state: 1 frozen, 2 populated, 4 exists
//	freezers = as cgroups, for v1 freezer paths
//	listeners= byte 0 (unknown: /proc/net/unix unreadable) or 1, then
//	           uvarint count, count × string path
//
// pid-gap is the pid minus the previous pid of the list (the first: minus 0).
//
// In a delta:
//
//	procs    = exits upserts
//	exits    = uvarint count, then count × uvarint pid-gap
//	upserts  = uvarint count, then count × (uvarint pid-gap, byte how, body)
//	           how 0: a new identity at this pid; body = process
//	           how 1: the same identity changed; body = uvarint mask, then
//	           the fields whose bit is set, in bit order, encoded as in
//	           process: 1 state, 2 ppid, 4 pgid, 8 sid, 16 comm, 32 argv,
//	           64 exe, 128 cwd, 256 uid, 512 threads, 1024 rss, 2048 cpu
//	           (svarint difference), 4096 flags, 8192 cgroup, 16384
//	           freezer, 32768 nspid, 65536 bits
//	cgroups  = uvarint count, then count × (string path, byte state);
//	           state 128 means the path is gone
//	freezers = as cgroups
//	listeners= byte 0 unchanged, 1 unknown, 2 changes: uvarint added,
//	           added × string, uvarint removed, removed × string
//
// In both, since version 2, what a refresh read for model.Watch:
//
//	watch    = resources gone wchans ooms
//	resources= uvarint count, then count × (string v2 path, string v1
//	           path, 15 × uvarint: cpu usec, memory, memory peak, memory
//	           limit, cpu limit cores (float64 bits), pids, pids limit,
//	           io read, io write, oom kills, pressure cpu, memory, io
//	           (float64 bits), have mask, asked mask); in a key frame
//	           every cgroup, in a delta those whose figures changed
//	gone     = uvarint count, count × (string v2 path, string v1 path):
//	           cgroups no longer read (none in a key frame)
//	wchans   = uvarint count, count × (uvarint pid, string wchan)
//	ooms     = uvarint count, count × (svarint time (Unix ns), uvarint
//	           pid, string comm, constraint, task memcg, oom memcg)
//
// What does not change while the host runs (boot time, clock ticks, page
// size, the recorder's pid, the cgroup mounts, the rules) is in the header.
package recording
