package proc_test

// Benchmarks of the scanner against a bulk sandsim fleet, at the sizes in
// BENCH_PROCS (see cmd/sandsim/benchfleet). `make bench` runs them; the
// targets they check (docs/performance.md): a steady refresh at most half the
// floor, a cold scan at most 1.3× C's stat+cmdline+cgroup, at most 2 MB
// allocated per steady refresh.

import (
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/cmd/sandsim/benchfleet"
	"github.com/sandtop/sandtop/proc"
)

func init() { proc.AfterTests(benchfleet.Close) }

// BenchmarkScanFloor is the floor every scan is measured against: readdir
// of /proc, then open/read/close of every /proc/PID/stat, with direct
// system calls and one reused buffer, and no parsing. It is what C does in
// ~104 ms at 10,000 processes on a 2-core VM.
func BenchmarkScanFloor(b *testing.B) {
	for _, n := range benchfleet.Procs() {
		b.Run(benchfleet.Name(n), func(b *testing.B) {
			benchfleet.Start(b, n)
			b.ReportAllocs()
			dirents := make([]byte, 64<<10)
			buf := make([]byte, 4096)
			procs := 0
			stop := benchfleet.CPUTimer(b)
			for b.Loop() {
				procs = floorScan(b, dirents, buf)
			}
			stop()
			b.ReportMetric(float64(procs), "procs")
		})
	}
}

func floorScan(b *testing.B, dirents, buf []byte) int {
	dir, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(dir)
	procs := 0
	for {
		n, err := unix.Getdents(dir, dirents)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			return procs
		}
		for rec := dirents[:n]; len(rec) > 0; {
			reclen := int(binary.NativeEndian.Uint16(rec[16:18]))
			name := rec[19:reclen]
			rec = rec[reclen:]
			if name[0] < '1' || name[0] > '9' {
				continue
			}
			end := 0
			for name[end] != 0 {
				end++
			}
			fd, err := unix.Open("/proc/"+string(name[:end])+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				continue // exited since the listing
			}
			if _, err := unix.Read(fd, buf); err == nil {
				procs++
			}
			unix.Close(fd)
		}
	}
}

// BenchmarkScanCold is a scan with nothing cached, as `sandtop list` does:
// a new scanner (mountinfo, btime), every stat, and the static files of
// every process (cmdline, exe, cwd, status, cgroup), read by one goroutine
// and by the default (one per core, at most four).
func BenchmarkScanCold(b *testing.B) {
	for _, n := range benchfleet.Procs() {
		for _, workers := range []int{1, 0} {
			b.Run(benchfleet.Name(n)+"/"+workersName(workers), func(b *testing.B) {
				benchfleet.Start(b, n)
				b.ReportAllocs()
				procs := 0
				stop := benchfleet.CPUTimer(b)
				for b.Loop() {
					s, err := proc.NewScanner(proc.Options{})
					if err != nil {
						b.Fatal(err)
					}
					proc.SetReadWorkers(s, workers)
					snap, err := s.Scan()
					if err != nil {
						b.Fatal(err)
					}
					procs = len(snap.Procs)
					s.Close()
				}
				stop()
				b.ReportMetric(float64(procs), "procs")
			})
		}
	}
}

// BenchmarkScanSteady is a refresh of the watch loop with nothing changed:
// one scanner, every identity known, so each process costs one pread of
// its held stat descriptor; read by one goroutine, and by the default (one
// per core, at most four).
func BenchmarkScanSteady(b *testing.B) {
	for _, n := range benchfleet.Procs() {
		for _, workers := range []int{1, 0} {
			b.Run(benchfleet.Name(n)+"/"+workersName(workers), func(b *testing.B) {
				benchfleet.Start(b, n)
				s, err := proc.NewScanner(proc.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				proc.SetReadWorkers(s, workers)
				if _, err := s.Scan(); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				procs := 0
				stop := benchfleet.CPUTimer(b)
				for b.Loop() {
					snap, err := s.Scan()
					if err != nil {
						b.Fatal(err)
					}
					procs = len(snap.Procs)
				}
				stop()
				b.ReportMetric(float64(procs), "procs")
				b.ReportMetric(float64(proc.HeldDescriptors(s)), "held-fds")
			})
		}
	}
}

func workersName(n int) string {
	if n == 0 {
		return "workers=default"
	}
	return "workers=" + strconv.Itoa(n)
}

// BenchmarkScanProcfs is the reference the scanner replaced: procfs's
// AllProcs, then Stat, CmdLine and Cgroups of every process (~830 ms and
// ~100 MB a scan at 10,000 processes on a 2-core VM).
func BenchmarkScanProcfs(b *testing.B) {
	for _, n := range benchfleet.Procs() {
		b.Run(benchfleet.Name(n), func(b *testing.B) {
			benchfleet.Start(b, n)
			fsys, err := procfs.NewDefaultFS()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			procs := 0
			stop := benchfleet.CPUTimer(b)
			for b.Loop() {
				all, err := fsys.AllProcs()
				if err != nil {
					b.Fatal(err)
				}
				procs = 0
				for _, p := range all {
					if _, err := p.Stat(); err != nil {
						continue
					}
					_, _ = p.CmdLine()
					_, _ = p.Cgroups()
					procs++
				}
			}
			stop()
			b.ReportMetric(float64(procs), "procs")
		})
	}
}
