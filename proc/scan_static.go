package proc

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A cold scan reads five files per process besides stat, and each costs
// the kernel more than the system call around it (status walks the task's
// memory counters, cgroup renders a path per hierarchy). The work is
// independent per process, so it is spread over up to maxReadWorkers
// goroutines, like the stat reads (pidTable.readAll): on 2-core machines
// two of them cut a cold scan at 10,000 processes to
// about 0.55× (BenchmarkScanCold, workers=1 against the default). A steady
// refresh has no new identities and reads none of these files.

// maxReadWorkers bounds the goroutines reading /proc; beyond a few, procfs
// lookups contend in the kernel, and a refresh should not take over a
// large host.
const maxReadWorkers = 4

// staticBatch is how many processes a worker takes at a time, and the
// fewest new identities for which another goroutine is worth starting.
const staticBatch = 32

// readStatics fills the static fields of every process the stat pass found:
// from the cache for known identities, else read from /proc (in parallel
// when there are enough of them), and caches what it read. A process that
// vanished meanwhile is marked gone.
func (s *Scanner) readStatics(kthreadd bool) {
	todo := s.todo[:0]
	for i := range s.found {
		f := &s.found[i]
		if f.gone {
			continue
		}
		if e := s.cache.lookup(f.st.identity(), f.last, f.st.comm, f.st.startCode); e != nil && !s.argvArrived(f, e) {
			e.gen = s.gen
			f.entry = e
			switch {
			case e.seeded:
				s.readSeeded(f)
			case e.young:
				s.readCgroupAgain(f)
			}
			continue
		}
		todo = append(todo, i)
	}
	s.todo = todo
	if len(todo) == 0 {
		s.countReads()
		return
	}
	s.cache.reserve(len(todo))
	workers := min(s.readWorkers(), (len(todo)+staticBatch-1)/staticBatch)
	for len(s.readers) < max(workers, 1) {
		s.readers = append(s.readers, newStaticReader())
	}
	var next atomic.Int64
	work := func(r *staticReader) {
		for {
			end := int(next.Add(staticBatch))
			start := end - staticBatch
			if start >= len(todo) {
				return
			}
			for _, i := range todo[start:min(end, len(todo))] {
				f := &s.found[i]
				kernel := f.st.kernel(kthreadd)
				var sf static
				if sf, f.gone = r.read(s.root, &f.st, kernel, s.mounts, s.need); f.gone {
					continue
				}
				p := new(Process)
				fillProcess(p, &f.st, &sf, kernel, s.pageSize)
				f.entry = &cacheEntry{proc: p, startCode: f.st.startCode, gen: s.gen, argvLate: sf.argvLate}
			}
		}
	}
	if workers <= 1 {
		work(s.readers[0])
	} else {
		var wg sync.WaitGroup
		for _, r := range s.readers[:workers] {
			wg.Go(func() { work(r) })
		}
		wg.Wait()
	}
	s.countReads()
	bornAfter := uint64(max(0, time.Since(s.bootTime)-youngAge) / (time.Second / userHZ))
	for _, i := range todo {
		if f := &s.found[i]; !f.gone {
			f.entry.young = f.st.start > bornAfter
			s.strings.internProcess(f.entry.proc) // not handed out yet
			s.cache.store(f.st.identity(), f.entry)
		}
	}
	s.strings.trim(s.cache.len())
	for _, r := range s.readers {
		r.strings.trim(s.cache.len())
	}
}

// argvArrived reports whether the cached entry e for f was made with an
// empty argv that /proc now shows filled in (see scanCache), so that f must
// be read afresh. It reads on the scanning goroutine: few entries ever
// carry argvLate. An entry Seed made from a snapshot carries it for every
// empty argv, having no read error to tell a missing cmdline by; the first
// failing read here clears it.
func (s *Scanner) argvArrived(f *statRead, e *cacheEntry) bool {
	if !e.argvLate || f.st.exited() {
		return false
	}
	r := s.mainReader()
	r.begin(s.root, f.st.pid)
	argv, _, err := r.readArgv()
	if err != nil {
		// A process whose cmdline cannot be read is in no execve window;
		// a vanished one is the stat pass's to notice.
		e.argvLate = false
	}
	return argv != nil
}

// readCgroupAgain reads the cgroup of a young entry's process once more
// (see cacheEntry.young), on the scanning goroutine, and takes it when it
// moved.
func (s *Scanner) readCgroupAgain(f *statRead) {
	e := f.entry
	e.young = false
	r := s.mainReader()
	r.begin(s.root, f.st.pid)
	v2, freezer, err := r.readCgroups(s.mounts)
	if err != nil || v2 == e.proc.Cgroup && freezer == e.proc.Freezer {
		return
	}
	sf := staticOf(e.proc)
	sf.cgroup, sf.freezer = v2, freezer
	e.setStatic(&sf, &s.strings)
}

// mainReader is the reader of the scanning goroutine, for the few reads
// made outside the parallel pass.
func (s *Scanner) mainReader() *staticReader {
	if len(s.readers) == 0 {
		s.readers = append(s.readers, newStaticReader())
	}
	return s.readers[0]
}

// countReads adds up what the readers read.
func (s *Scanner) countReads() {
	for _, r := range s.readers {
		s.reads.add(r.n)
		r.n = readCounts{}
	}
}

// readSeeded reads what a seeded entry (Scanner.Seed) left unread and this
// scanner's Need asks for. It runs once per seeded identity, on the
// scanning goroutine: the snapshot a scanner is seeded from was made with
// the same rules, so there is seldom anything left to read.
func (s *Scanner) readSeeded(f *statRead) {
	e := f.entry
	e.seeded = false
	r := s.mainReader()
	sf := staticOf(e.proc)
	r.begin(s.root, f.st.pid)
	r.details(&f.st, &sf, s.need)
	if sf.unread == e.proc.Unread {
		return
	}
	if r.missing && !r.sameProcess(&f.st) {
		f.gone = true
		return
	}
	sf.partial = sf.partial || r.missing
	e.setStatic(&sf, &s.strings)
}

// interner shares one copy of the strings many processes have alike: the
// exe of every `sleep` of a fleet, the cgroup of every process of a
// container. The cache keeps those strings for each live process, and at
// 10,000 processes the copies were 2 MB of heap.
type interner struct {
	m map[string]string
}

func (in *interner) intern(s string) string {
	if s == "" {
		return s
	}
	if in.m == nil {
		in.m = map[string]string{}
	}
	if t, ok := in.m[s]; ok {
		return t
	}
	in.m[s] = s
	return s
}

// internBytes is intern for bytes: only a string not seen before is
// allocated.
func (in *interner) internBytes(b []byte) string {
	if t, ok := in.m[string(b)]; ok || len(b) == 0 {
		return t
	}
	return in.intern(string(b))
}

// internProcess interns the static strings of a Process no snapshot holds
// yet.
func (in *interner) internProcess(p *Process) {
	p.Exe = in.intern(p.Exe)
	p.Cwd = in.intern(p.Cwd)
	p.Cgroup = in.intern(p.Cgroup)
	p.Freezer = in.intern(p.Freezer)
}

// trim forgets the table once it has grown well past the live processes'
// strings, so it cannot grow without bound as processes come and go; the
// strings themselves stay with the processes that use them.
func (in *interner) trim(live int) {
	if len(in.m) > 4*live+1024 {
		in.m = nil
	}
}

// readWorkers is how many goroutines may read stat and static files.
func (s *Scanner) readWorkers() int {
	if s.workers > 0 {
		return s.workers
	}
	return min(runtime.GOMAXPROCS(0), maxReadWorkers)
}
