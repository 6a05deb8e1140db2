package reap

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/proc"
	"github.com/sandtop/sandtop/proc/proctest"
)

// TestTortureReaper runs the reaper (--apply, in a loop) over randomized
// fleets while supervisors bounce: some sandboxes stay healthy, some are
// orphans from the start, and some are orphans whose supervisor comes back
// for a while and dies again, once or twice. It holds that no healthy
// sandbox and no bystander is harmed, that no sandbox is reaped before it
// has been an orphan for --for since its supervisor last died, and that
// every sandbox that was an orphan for --for plus one interval (plus the
// time a pass of teardowns takes) is reaped. TORTURE_REAP sets the number
// of passes, TORTURE_SEED the seed.
// steadyScan measures a refresh of the host after a cold scan, the larger
// of three.
func steadyScan(t *testing.T) time.Duration {
	t.Helper()
	sc, err := proc.NewScanner(proc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var worst time.Duration
	for i := range 4 {
		start := time.Now()
		if _, err := sc.Scan(); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			worst = max(worst, time.Since(start))
		}
	}
	return worst
}

func TestTortureReaper(t *testing.T) {
	proctest.RequireRoot(t)
	passes := defaultReapPasses
	if s := os.Getenv("TORTURE_REAP"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("TORTURE_REAP=%q", s)
		}
		passes = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TORTURE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 14))
	defer func(old time.Duration) { minFor = old }(minFor)
	minFor = 0

	// The timings scale with how long a scan of this host takes (a host
	// shared with bulk fleets scans for seconds): --for must span several
	// scans, and a bounced supervisor must live through two of them, so
	// that a scan sees it.
	scan := steadyScan(t)
	const interval = 200 * time.Millisecond
	forD := max(1500*time.Millisecond, 4*scan)
	t.Logf("a steady scan takes %v: --for %v", scan.Round(time.Millisecond), forD.Round(time.Millisecond))
	var totals reapTotals
	for pass := range passes {
		// A subtest per pass, so that each pass's fleet is closed (and
		// checked for leaks) before the next starts.
		t.Run(fmt.Sprintf("pass%d", pass), func(t *testing.T) { tortureReapPass(t, pass, rng, forD, interval, &totals) })
	}
	t.Logf("TORTURE reaper: passes=%d sandboxes=%d healthy=%d orphans=%d bouncers=%d bounces=%d lost_bounces=%d reaped=%d bystanders=%d harmed=%d reaped_early=%d missed=%d max_latency_after_orphaned=%v (--for %v, interval %v)",
		passes, totals.sandboxes, totals.healthy, totals.orphans, totals.bouncers, totals.bounces, totals.lostBounces, totals.reaped, totals.bystanders,
		totals.harmed, totals.early, totals.missed, totals.maxLatency.Round(time.Millisecond), forD, interval)
}

// reapTotals are the torture's figures over every pass.
type reapTotals struct {
	sandboxes, healthy, orphans, bouncers, bounces, reaped, bystanders int
	// lostBounces are bounces that found their orphan already reaped.
	lostBounces           int
	harmed, early, missed int
	maxLatency            time.Duration
}

// tortureReapPass is one pass of TestTortureReaper: a random fleet, its
// bounces, the reaper, and the checks.
func tortureReapPass(t *testing.T, pass int, rng *rand.Rand, forD, interval time.Duration, totals *reapTotals) {
	runtimes := []fleet.Runtime{fleet.VM0, fleet.Containerd, fleet.Cube}
	{
		type role int
		const (
			healthy role = iota
			orphan
			bouncer
		)
		var specs []fleet.SandboxSpec
		roles := map[string]role{}
		for i := range 3 + rng.IntN(4) {
			rt := runtimes[rng.IntN(len(runtimes))]
			r := role(rng.IntN(3))
			name := fmt.Sprintf("p%d-%d-%s", pass, i, rt)
			specs = append(specs, fleet.SandboxSpec{Name: name, Runtime: rt, Orphan: r != healthy})
			roles[name] = r
		}
		// One healthy containerd and one healthy vm0 carry bystanders.
		specs = append(specs, fleet.SandboxSpec{Name: "ctr-bystanders", Runtime: fleet.Containerd}, fleet.SandboxSpec{Name: "vm-bystanders", Runtime: fleet.VM0})
		roles["ctr-bystanders"], roles["vm-bystanders"] = healthy, healthy
		f := fleettest.Start(t, fleet.Spec{Sandboxes: specs, Bystanders: []fleet.BystanderSpec{
			{Role: "bystander-cgroup", Argv: []string{"ctr", "events"}, CgroupOf: "ctr-bystanders"},
			{Role: "bystander-sibling", Argv: []string{"node_exporter"}, SiblingOf: "vm-bystanders"},
		}})
		m := f.Manifest()
		sel, texts := selectFleet(t, []string{"orphan"}, m)
		h := newHarness(t, Config{
			Policy:  Policy{For: forD},
			Selects: sel, Texts: texts, Interval: interval, Apply: true, Grace: 100 * time.Millisecond, Deadline: 2 * time.Second,
		}, fleetRules(m))

		// lastOrphaned is when each sandbox last lost its supervisor.
		start := time.Now()
		var mu sync.Mutex
		lastOrphaned := map[string]time.Time{}
		for name, r := range roles {
			if r != healthy {
				lastOrphaned[name] = start
			}
		}
		// IDs read now: the fleet updates its manifest in place as the
		// bounces below change it.
		ids := map[string]string{}
		for name := range roles {
			ids[name] = m.Sandbox(name).ID
		}
		stop := make(chan struct{})
		bounced := make(chan error, 1)
		go func() {
			var wg sync.WaitGroup
			for name, r := range roles {
				if r != bouncer {
					continue
				}
				n := 1 + rng.IntN(2)
				at := time.Duration(rng.Int64N(int64(forD / 2)))
				id := ids[name]
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(at)
					for range n {
						err := f.BounceSupervisor(name)
						since := time.Now()
						// The supervisor lives until a scan of the reaper's
						// has seen it: a bounce between two scans that
						// changes no identity is beyond any sampler. An
						// orphan can come due while a loaded host is still
						// restarting its supervisor, though, and the reaper
						// may take it (and its workspace) first: that race
						// is the reaper's to win, and whether it won too
						// early is checked below like any reap.
						supervised, reaped := h.sawSupervisedOrReaped(id, since, time.Minute)
						switch {
						case err == nil && supervised:
						case reaped:
							mu.Lock()
							totals.lostBounces++
							mu.Unlock()
							return
						case err != nil:
							bounced <- err
							return
						default:
							bounced <- fmt.Errorf("the reaper never saw %s supervised", name)
							return
						}
						// The supervisor dies after this moment: the
						// earliest the reaper may count from.
						before := time.Now()
						if err := f.KillSupervisor(name); err != nil {
							bounced <- err
							return
						}
						mu.Lock()
						lastOrphaned[name] = before
						totals.bounces++
						mu.Unlock()
						time.Sleep(100 * time.Millisecond)
					}
				}()
			}
			wg.Wait()
			bounced <- nil
		}()
		done := make(chan error, 1)
		go func() { done <- h.r.Run(t.Context(), stop) }()
		if err := <-bounced; err != nil {
			close(stop)
			<-done
			t.Fatal(err)
		}
		// Run until every orphan is reaped, or long after it was due: on a
		// loaded host one pass of teardowns, each with its own scans, can
		// take many seconds, which the latency figure shows.
		var latest time.Time
		for _, at := range lastOrphaned {
			if at.After(latest) {
				latest = at
			}
		}
		deadline := latest.Add(forD + time.Minute)
		for time.Now().Before(deadline) {
			m = f.Manifest()
			all := true
			for name, r := range roles {
				if r != healthy && !noneAlive(m.Sandbox(name)) {
					all = false
				}
			}
			if all {
				break
			}
			time.Sleep(interval)
		}
		close(stop)
		if err := <-done; err != nil {
			t.Fatal(err)
		}

		m = f.Manifest()
		reapedAt := map[string]time.Time{}
		for _, e := range h.entries(t) {
			if e.Action == "reaped" || e.Action == "failed" {
				if s := m.Sandbox(e.ID); s != nil {
					reapedAt[s.Name] = e.Time
				}
			}
		}
		for name, r := range roles {
			s := m.Sandbox(name)
			totals.sandboxes++
			switch r {
			case healthy:
				totals.healthy++
				if !allAlive(s) {
					totals.harmed++
					t.Errorf("pass %d: healthy %s harmed", pass, name)
				}
				continue
			case orphan:
				totals.orphans++
			case bouncer:
				totals.bouncers++
			}
			at, ok := reapedAt[name]
			if !ok || !noneAlive(s) {
				totals.missed++
				var seen []string
				for _, e := range h.entries(t) {
					if e.ID == s.ID {
						seen = append(seen, fmt.Sprintf("%s@%v %s: %s", e.Action, e.Time.Sub(start).Round(10*time.Millisecond), e.Reason, e.Failures))
					}
				}
				t.Errorf("pass %d: %s (orphan since %v) not reaped; decisions: %q", pass, name, lastOrphaned[name].Sub(start), seen)
				continue
			}
			totals.reaped++
			// A decision's time is its scan's start, and a scan that began
			// before the supervisor died can still see it dead: allow the
			// longest scan the reaper made, nothing more.
			h.mu.Lock()
			took := h.maxTook
			h.mu.Unlock()
			if lat := at.Sub(lastOrphaned[name]); lat < forD-took {
				totals.early++
				t.Errorf("pass %d: %s reaped %v after its supervisor last died, before --for %v (less the longest scan, %v)", pass, name, lat, forD, took)
			} else {
				totals.maxLatency = max(totals.maxLatency, lat)
			}
		}
		for _, b := range m.Bystanders {
			totals.bystanders++
			if !alive(b.Identity) {
				totals.harmed++
				t.Errorf("pass %d: bystander %s harmed", pass, b.Role)
			}
		}
	}
}
