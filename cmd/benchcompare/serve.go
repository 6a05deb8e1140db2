package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// serveCost is what `sandtop serve` costs on the fleet.
type serveCost struct {
	interval   time.Duration
	window     time.Duration
	coldCPU    time.Duration // CPU until the first scan answered /healthz
	cpuShare   float64       // CPU time over the window / the window
	scans      int           // scans in the window
	rss        []int64       // VmRSS, sampled every second of the window
	hwm        int64
	scrapes    []time.Duration // /metrics, default flags
	perSandbox []time.Duration // /metrics with --per-sandbox
	metricsLen int
}

// measureServe runs `sandtop serve --interval 15s` the way a host would,
// scraped every interval as Prometheus would, and reads its CPU time over
// the window (after its first, cold scan), its RSS at the end, and the
// time a scrape takes; then, briefly, the scrape time with --per-sandbox.
func measureServe(ctx context.Context, res *sizeResult, o options) error {
	c := &serveCost{interval: 15 * time.Second, window: o.serveWindow}
	s, err := startServe(o.sandtop, "--interval", c.interval.String())
	if err != nil {
		return err
	}
	defer s.stop()
	if c.coldCPU, err = s.cpu(); err != nil {
		return err
	}
	scansBefore, _ := s.scans()
	start := time.Now()
	lastScrape := start
	for time.Since(start) < c.window {
		if !sleepCtx(ctx, time.Second) {
			return ctx.Err()
		}
		rss, _ := memOf(s.pid)
		c.rss = append(c.rss, rss)
		if time.Since(lastScrape) < c.interval {
			continue
		}
		lastScrape = time.Now()
		d, n, err := s.scrape()
		if err != nil {
			return err
		}
		c.scrapes, c.metricsLen = append(c.scrapes, d), n
	}
	cpu, err := s.cpu()
	if err != nil {
		return err
	}
	c.cpuShare = float64(cpu-c.coldCPU) / float64(time.Since(start))
	scansAfter, _ := s.scans()
	c.scans = scansAfter - scansBefore
	_, c.hwm = memOf(s.pid)
	// Scrapes in a burst too, so the median is not of a handful.
	for range 20 {
		d, _, err := s.scrape()
		if err != nil {
			return err
		}
		c.scrapes = append(c.scrapes, d)
	}
	s.stop()

	p, err := startServe(o.sandtop, "--interval", c.interval.String(), "--per-sandbox")
	if err != nil {
		return err
	}
	defer p.stop()
	for range 20 {
		d, _, err := p.scrape()
		if err != nil {
			return err
		}
		c.perSandbox = append(c.perSandbox, d)
	}
	var b strings.Builder
	c.write(&b)
	res.Serve = b.String()
	return nil
}

type serveProc struct {
	cmd  *exec.Cmd
	pid  int
	url  string
	done chan error
}

// startServe starts sandtop serve on a free loopback port and waits until
// its first scan answered /healthz.
func startServe(sandtop string, args ...string) (*serveProc, error) {
	cmd := exec.Command(sandtop, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &serveProc{cmd: cmd, pid: cmd.Process.Pid, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "sandtop serve: "); ok && strings.HasPrefix(u, "http://") {
				u, _, _ = strings.Cut(u, "/metrics")
				addr <- u
			}
		}
		s.done <- cmd.Wait()
	}()
	select {
	case s.url = <-addr:
	case err := <-s.done:
		return nil, fmt.Errorf("sandtop serve exited: %v", err)
	case <-time.After(30 * time.Second):
		s.stop()
		return nil, errors.New("sandtop serve did not listen within 30 s")
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("sandtop serve: no good scan within 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends serve with SIGTERM (by its pid), SIGKILL if it lingers.
func (s *serveProc) stop() {
	if s.cmd.ProcessState != nil || s.pid == 0 {
		return
	}
	_ = syscall.Kill(s.pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.pid = 0
}

func (s *serveProc) cpu() (time.Duration, error) {
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", s.pid)); err != nil {
		return 0, err
	}
	return cpuTime(s.pid), nil
}

// scrape reads /metrics as Prometheus asks for it and times it.
func (s *serveProc) scrape() (time.Duration, int, error) {
	req, err := http.NewRequest("GET", s.url+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("scrape: %d %v", resp.StatusCode, err)
	}
	return time.Since(start), int(n), nil
}

// scans reads sandtop_scan_duration_seconds_count from a scrape.
func (s *serveProc) scans() (int, error) {
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "sandtop_scan_duration_seconds_count "); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("no sandtop_scan_duration_seconds_count")
}

func (c *serveCost) write(w io.Writer) {
	mid := func(ds []time.Duration) (time.Duration, time.Duration) {
		return median(ds), slices.Max(ds)
	}
	sm, sx := mid(c.scrapes)
	pm, px := mid(c.perSandbox)
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISSED"
	}
	fmt.Fprintf(w, "\nsandtop serve --interval %s, scraped every %s for %s (%d scans):\n", c.interval, c.interval, c.window, c.scans)
	fmt.Fprintf(w, "  CPU, average over the window        %.2f%% of a core   ≤ 1%% (%s)\n", 100*c.cpuShare, verdict(c.cpuShare <= 0.01))
	if c.scans > 0 {
		perScan := time.Duration(c.cpuShare * float64(c.window) / float64(c.scans))
		fmt.Fprintf(w, "  CPU per scan (with its scrape)      %s\n", ms(perScan))
	}
	fmt.Fprintf(w, "  CPU until the first scan answered   %s\n", ms(c.coldCPU))
	rssMid, rssMax := median(c.rss), slices.Max(c.rss)
	fmt.Fprintf(w, "  RSS, median (max) of %d samples     %.1f MiB (%.1f), peak %.1f   ≤ 40 MiB (%s)\n",
		len(c.rss), float64(rssMid)/(1<<20), float64(rssMax)/(1<<20), float64(c.hwm)/(1<<20), verdict(rssMid <= 40<<20))
	fmt.Fprintf(w, "  scrape, median (max) of %d          %s (%s), %d bytes   ≤ 50 ms (%s)\n", len(c.scrapes), ms(sm), ms(sx), c.metricsLen, verdict(sx <= 50*time.Millisecond))
	fmt.Fprintf(w, "  scrape with --per-sandbox (limit 500), median (max) of %d   %s (%s)\n", len(c.perSandbox), ms(pm), ms(px))
}
