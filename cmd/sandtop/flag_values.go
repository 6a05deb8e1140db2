package main

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sandtop/sandtop/ui/format"
)

// Every flag that takes a number, a duration or one of a few words is
// defined here, with the range it accepts. The value is checked while the
// flags are parsed, so every command refuses a bad value before it reads
// the host or signals anything, in the same words whichever command it is:
// exit 2 (the root's flag error func), the flag and the value named by
// pflag ("invalid argument "-1s" for "--grace" flag: …"), then what the
// flag accepts, never the wording of strconv or time.

// The ranges several commands share.
var (
	// graceRange: a negative grace is not "SIGKILL at once" (that is 0);
	// more than an hour between SIGTERM and SIGKILL is a typo.
	graceRange = durationRange{0, time.Hour}
	// deadlineRange: the verify loop needs time for a fresh scan and a
	// SIGKILL round; past an hour survivors should be reported.
	deadlineRange = durationRange{time.Second, time.Hour}
	// intervalRange: a scan of a big host takes tens of milliseconds;
	// the screen, serve, record and reap all scan at most ten times a
	// second.
	intervalRange = durationRange{100 * time.Millisecond, 24 * time.Hour}
	// spanRange: how long to watch, wait or record: up to a year.
	spanRange = durationRange{0, 366 * 24 * time.Hour}
)

// maxPID is the kernel's largest pid_max (PID_MAX_LIMIT on 64-bit, 2^22).
const maxPID = 1 << 22

type durationRange struct{ min, max time.Duration }

func (r durationRange) String() string {
	return "from " + format.Duration(r.min) + " to " + format.Duration(r.max)
}

// durationValue is a time.Duration flag that holds only values in its range.
type durationValue struct {
	p *time.Duration
	r durationRange
}

func durationFlag(f *pflag.FlagSet, p *time.Duration, name string, def time.Duration, r durationRange, usage string) {
	*p = def
	f.Var(&durationValue{p, r}, name, usage+" ("+r.String()+")")
}

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return errors.New("not a duration: a number and a unit (ms, s, m, h), like 500ms, 30s or 2m")
	}
	if v < d.r.min || v > d.r.max {
		return fmt.Errorf("out of range: %s", d.r)
	}
	*d.p = v
	return nil
}

func (d *durationValue) String() string { return d.p.String() }
func (d *durationValue) Type() string   { return "duration" }

// intValue is an int flag that holds only values in [min, max].
type intValue struct {
	p        *int
	min, max int
}

func intFlag(f *pflag.FlagSet, p *int, name string, def, min, max int, usage string) {
	*p = def
	f.Var(&intValue{p, min, max}, name, fmt.Sprintf("%s (%d to %d)", usage, min, max))
}

func (v *intValue) Set(s string) error {
	n, err := parseInt(s)
	if err != nil {
		return err
	}
	if n < v.min || n > v.max {
		return fmt.Errorf("out of range: from %d to %d", v.min, v.max)
	}
	*v.p = n
	return nil
}

func (v *intValue) String() string { return strconv.Itoa(*v.p) }
func (v *intValue) Type() string   { return "int" }

func parseInt(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, errors.New("out of range: too large")
		}
		return 0, errors.New("not a whole number")
	}
	return n, nil
}

// pidsValue is a repeatable --pid: each a process ID, comma-separated or
// one per flag.
type pidsValue struct {
	p   *[]int
	set bool
}

func pidsFlag(f *pflag.FlagSet, p *[]int, name, usage string) {
	f.Var(&pidsValue{p: p}, name, usage)
}

func (v *pidsValue) Set(s string) error {
	if !v.set {
		*v.p, v.set = nil, true
	}
	for _, w := range strings.Split(s, ",") {
		n, err := parseInt(w)
		if err != nil {
			return fmt.Errorf("%q: not a process ID", w)
		}
		if n < 1 || n > maxPID {
			return fmt.Errorf("%d: not a process ID (1 to %d)", n, maxPID)
		}
		*v.p = append(*v.p, n)
	}
	return nil
}

func (v *pidsValue) String() string {
	s := make([]string, len(*v.p))
	for i, n := range *v.p {
		s[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(s, ",") + "]"
}

func (v *pidsValue) Type() string { return "pid" }

// choiceValue is a string flag that holds one of a few words ("" when it
// is not given and has no default).
type choiceValue struct {
	p       *string
	choices []string
}

func choiceFlag(f *pflag.FlagSet, p *string, name, def string, choices []string, usage string) {
	*p = def
	f.Var(&choiceValue{p, choices}, name, usage)
}

func (v *choiceValue) Set(s string) error {
	if !slices.Contains(v.choices, s) {
		return fmt.Errorf("want %s", strings.Join(v.choices, " or "))
	}
	*v.p = s
	return nil
}

func (v *choiceValue) String() string { return *v.p }
func (v *choiceValue) Type() string   { return "string" }

// addrValue is a listen address, host:port, checked before anything is
// served (a mistyped one would otherwise fail only at net.Listen, in Go's
// words).
type addrValue struct{ p *string }

func addrFlag(f *pflag.FlagSet, p *string, name, def, usage string) {
	*p = def
	f.Var(&addrValue{p}, name, usage)
}

func (v *addrValue) Set(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host != "" && host != "localhost" && net.ParseIP(host) == nil {
		return errors.New("not an address: want an IP address (or localhost) and a port, like 127.0.0.1:9464 or :9464")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return errors.New("not a port: want a number from 0 to 65535 after the colon")
	}
	*v.p = s
	return nil
}

func (v *addrValue) String() string { return *v.p }
func (v *addrValue) Type() string   { return "address" }
