package proc

// Hooks for the benchmarks of package proc_test, which cannot reach
// unexported names.

// SetReadWorkers fixes how many goroutines read /proc (0: the default), so
// the benchmarks can compare one with the default.
func SetReadWorkers(s *Scanner, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workers = n
}

// HeldDescriptors reports how many descriptors the scanner holds (stat and
// cgroup state files).
func HeldDescriptors(s *Scanner) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.fds.held.Load())
}

// afterTests run at the end of TestMain, after every test and benchmark:
// the benchmarks close their shared fleet there (package proc's tests
// cannot import the fleet package, which imports proc).
var afterTests []func() error

// AfterTests registers fn to run once every test and benchmark is done.
func AfterTests(fn func() error) { afterTests = append(afterTests, fn) }

// Invalidate forgets the cached static fields of one identity, so the next
// scan reads them again, as if the process had just been migrated to
// another cgroup: the cache does not notice migrations (see scan_cache.go),
// and the tests use it to show that a migration shows only then.
func (s *Scanner) Invalidate(id Identity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache.drop(id)
}
