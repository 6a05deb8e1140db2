package teardown

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc"
)

// churnWorkers is how many goroutines fork and exec at once; with two
// cores, eight keep the fork rate above 1,000 a second even on a busy host.
const churnWorkers = 8

// churn starts short-lived children as fast as it can, each with a unique
// argv token "<prefix>-<seq>" that does not depend on its pid, and records
// which identity got which token and argv. Most children are /bin/true:
// born, exec'd and dead within a millisecond, which is the hardest case for
// a scanner that reads stat, cmdline and cgroup in separate steps. One in
// eight is a shell that lingers 50 ms (its token is its $0), so that scans
// see churn children for certain.
type churn struct {
	prefix string
	births atomic.Int64
	mu     sync.Mutex
	ids    map[int64]proc.Identity // by seq
	argvs  map[int64][]string
	errs   []error
}

func newChurn() *churn {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &churn{prefix: "churn" + hex.EncodeToString(b), ids: map[int64]proc.Identity{}, argvs: map[int64][]string{}}
}

// run forks until stop closes; it returns once every child is reaped.
func (c *churn) run(stop <-chan struct{}) {
	var wg sync.WaitGroup
	for range churnWorkers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				seq := c.births.Add(1)
				argv := []string{"/bin/true", c.prefix + "-" + strconv.FormatInt(seq, 10)}
				if seq%8 == 0 {
					argv = []string{"/bin/sh", "-c", "sleep 0.05; :", argv[1]}
				}
				cmd := exec.Command(argv[0], argv[1:]...)
				if err := cmd.Start(); err != nil {
					c.fail(fmt.Errorf("start churn child: %w", err))
					return
				}
				// Until Wait reaps it, the pid is the child's, alive or
				// zombie, so this reads its own start time.
				id, _, err := proc.ReadIdentity("/proc", cmd.Process.Pid)
				if err != nil {
					c.fail(fmt.Errorf("identity of churn child %d: %w", cmd.Process.Pid, err))
				}
				c.mu.Lock()
				c.ids[seq] = id
				c.argvs[seq] = argv
				c.mu.Unlock()
				if err := cmd.Wait(); err != nil {
					c.fail(fmt.Errorf("churn child: %w", err))
				}
			}
		})
	}
	wg.Wait()
}

func (c *churn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}

// sighting is a churn child as one scan saw it.
type sighting struct {
	seq  int64
	id   proc.Identity
	ppid int
	argv []string
}

// seen returns the churn children in a snapshot.
func (c *churn) seen(snap *proc.Snapshot) []sighting {
	var out []sighting
	for _, p := range snap.Procs {
		for _, a := range p.Argv {
			if rest, ok := strings.CutPrefix(a, c.prefix+"-"); ok {
				seq, _ := strconv.ParseInt(rest, 10, 64)
				out = append(out, sighting{seq: seq, id: p.ID(), ppid: p.PPID, argv: p.Argv})
				break
			}
		}
	}
	return out
}

// TestTortureChurnScan runs the scanner and model.Build with the presets
// in a loop while thousands of processes a second are born and die. No
// scan may fail, nothing may panic, and no process may be shown with
// another's argv: every process seen with a child's token must be that
// child (same pid and start time) with exactly its argv, or a child it
// forked that has not exec'd yet.
func TestTortureChurnScan(t *testing.T) {
	dur := envDuration(t, "TORTURE_CHURN", defaultChurn)
	c := newChurn()
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	b := model.NewBuilder(model.Effective(nil, true))

	stop := make(chan struct{})
	churned := make(chan struct{})
	go func() { c.run(stop); close(churned) }()
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-churned
	})

	var (
		scans, scanErrs, sandboxes int
		sightings                  []sighting
		prev                       *model.View
		maxScan                    time.Duration
	)
	start := time.Now()
	// At least minScans scans, however loaded the host: the first scan of
	// a host with thousands of processes can take seconds.
	const minScans = 20
	for time.Since(start) < dur || scans < minScans && time.Since(start) < 4*dur+30*time.Second {
		t0 := time.Now()
		snap, v, err := scanAndBuild(sc, b, prev)
		maxScan = max(maxScan, time.Since(t0))
		scans++
		if err != nil {
			scanErrs++
			t.Errorf("scan %d: %v", scans, err)
			continue
		}
		prev = v
		sandboxes = max(sandboxes, len(v.Sandboxes))
		sightings = append(sightings, c.seen(snap)...)
	}
	close(stop)
	<-churned
	elapsed := time.Since(start)

	c.mu.Lock()
	defer c.mu.Unlock()
	for _, err := range c.errs[:min(len(c.errs), 5)] {
		t.Errorf("churn: %v", err)
	}
	mixups := 0
	for _, s := range sightings {
		want, ok := c.ids[s.seq]
		wantArgv := c.argvs[s.seq]
		sameArgv := strings.Join(s.argv, "\x00") == strings.Join(wantArgv, "\x00")
		// A child the shell forked shows its parent's argv until it
		// execs (fork(2) copies the memory cmdline is read from): that is
		// the truth, not a mix-up.
		forkedChild := sameArgv && s.ppid == want.PID && s.id.Start >= want.Start
		if !ok || !sameArgv || s.id != want && !forkedChild {
			mixups++
			if mixups <= 5 {
				t.Errorf("process %v shown with argv %q; that argv belongs to %v", s.id, s.argv, want)
			}
		}
	}
	births := c.births.Load()
	rate := float64(births) / elapsed.Seconds()
	figures(t, "churn", "duration", elapsed.Round(time.Millisecond), "births", births,
		"births_per_s", int(rate), "scans", scans, "max_scan", maxScan.Round(time.Millisecond),
		"churn_children_seen", len(sightings), "identity_mixups", mixups, "scan_errors", scanErrs)
	if len(sightings) == 0 {
		t.Error("no scan ever saw a churn child: the test proved nothing")
	}
	if tortureLong && rate < 1000 {
		t.Errorf("only %.0f births/s, want at least 1,000", rate)
	}
}

// scanAndBuild scans and groups once, turning a panic into an error so
// that the test reports it with the scan it happened in.
func scanAndBuild(sc *proc.Scanner, b *model.Builder, prev *model.View) (snap *proc.Snapshot, v *model.View, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	if snap, err = sc.Scan(); err != nil {
		return nil, nil, err
	}
	return snap, b.Build(snap, prev), nil
}
