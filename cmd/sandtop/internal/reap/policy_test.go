package reap

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandtop/sandtop/model"
)

// scan is what one pass of a test sees: the selected sandboxes, each as
// "id/identity/age" (age in minutes).
type scan struct {
	at   time.Duration // since the test's start
	seen []string
	// want is each sandbox's action ("a:reap b:wait c:defer"), in the
	// decisions' order.
	want string
}

func seen(spec string) Seen {
	var age int
	parts := strings.Split(spec, "/")
	fmt.Sscan(parts[2], &age)
	return Seen{Key: "vm0:" + parts[0], ID: parts[0], Runtime: "vm0", Identity: parts[1], Badges: []model.Badge{model.BadgeOrphan},
		Age: time.Duration(age) * time.Minute, Supervised: len(parts) > 3 && parts[3] == "supervised"}
}

func TestTracker(t *testing.T) {
	m := time.Minute
	cases := []struct {
		name  string
		p     Policy
		scans []scan
	}{
		{
			name: "reaped only after matching for --for",
			p:    Policy{For: 10 * m},
			scans: []scan{
				{at: 0, seen: []string{"a/1/60"}, want: "a:wait"},
				{at: 5 * m, seen: []string{"a/1/65"}, want: "a:wait"},
				{at: 10 * m, seen: []string{"a/1/70"}, want: "a:reap"},
			},
		},
		{
			name: "a scan where it did not match restarts the clock (supervisor bounced)",
			p:    Policy{For: 10 * m},
			scans: []scan{
				{at: 0, seen: []string{"a/1/60"}, want: "a:wait"},
				{at: 5 * m, seen: nil, want: ""},
				{at: 6 * m, seen: []string{"a/1/66"}, want: "a:wait"},
				{at: 15 * m, seen: []string{"a/1/75"}, want: "a:wait"},
				{at: 16 * m, seen: []string{"a/1/76"}, want: "a:reap"},
			},
		},
		{
			name: "a new identity under the same ID restarts the clock (runner replaced the VM)",
			p:    Policy{For: 10 * m},
			scans: []scan{
				{at: 0, seen: []string{"a/1/60"}, want: "a:wait"},
				{at: 9 * m, seen: []string{"a/2/1"}, want: "a:wait"},
				{at: 10 * m, seen: []string{"a/2/2"}, want: "a:wait"},
				{at: 19 * m, seen: []string{"a/2/11"}, want: "a:reap"},
			},
		},
		{
			name: "--min-age holds back a young sandbox that matched long enough",
			p:    Policy{For: 1 * m, MinAge: 30 * m},
			scans: []scan{
				{at: 0, seen: []string{"a/1/20"}, want: "a:wait"},
				{at: 2 * m, seen: []string{"a/1/22"}, want: "a:wait"},
				{at: 10 * m, seen: []string{"a/1/30"}, want: "a:reap"},
			},
		},
		{
			name: "--max: oldest first, the rest deferred to the next pass",
			p:    Policy{Max: 2},
			scans: []scan{
				{at: 0, seen: []string{"young/1/5", "old/1/50", "mid/1/20", "waiting/1/1"}, want: "old:reap mid:reap young:defer waiting:defer"},
			},
		},
		{
			name: "a supervised sandbox is never reaped, whatever its badges",
			p:    Policy{Max: 5},
			scans: []scan{
				{at: 0, seen: []string{"a/1/50/supervised", "b/1/5"}, want: "b:reap a:keep"},
				{at: 60 * m, seen: []string{"a/1/110/supervised"}, want: "a:keep"},
			},
		},
		{
			name: "equal ages go by ID",
			p:    Policy{Max: 1},
			scans: []scan{
				{at: 0, seen: []string{"b/1/5", "a/1/5"}, want: "a:reap b:defer"},
			},
		},
		{
			name: "a gap longer than MaxGap restarts every clock",
			p:    Policy{For: 10 * m, MaxGap: 10 * m},
			scans: []scan{
				{at: 0, seen: []string{"a/1/60"}, want: "a:wait"},
				{at: 2 * m, seen: []string{"a/1/62"}, want: "a:wait"},
				{at: 14 * m, seen: []string{"a/1/74"}, want: "a:wait"},
				{at: 20 * m, seen: []string{"a/1/80"}, want: "a:wait"},
				{at: 24 * m, seen: []string{"a/1/84"}, want: "a:reap"},
			},
		},
		{
			name: "--for 0 (with --once) reaps at the first scan",
			p:    Policy{},
			scans: []scan{
				{at: 0, seen: []string{"a/1/0"}, want: "a:reap"},
			},
		},
	}
	start := time.Unix(1_700_000_000, 0)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTracker(c.p)
			for i, s := range c.scans {
				var in []Seen
				for _, spec := range s.seen {
					in = append(in, seen(spec))
				}
				var got []string
				for _, d := range tr.Observe(start.Add(s.at), in) {
					got = append(got, d.ID+":"+string(d.Action))
					if d.Reason == "" || (d.Action != Reap && d.Skip == "") {
						t.Errorf("scan %d: %s: reason %q, skip %q", i, d.ID, d.Reason, d.Skip)
					}
				}
				if g := strings.Join(got, " "); g != s.want {
					t.Fatalf("scan %d at %v: %q, want %q", i, s.at, g, s.want)
				}
			}
		})
	}
}

func TestReason(t *testing.T) {
	tr := NewTracker(Policy{For: 10 * time.Minute, MinAge: 10 * time.Minute})
	now := time.Unix(1_700_000_000, 0)
	tr.Observe(now, []Seen{seen("a/1/30")})
	d := tr.Observe(now.Add(2*time.Minute), []Seen{seen("a/1/32")})[0]
	if want := "orphan for 2m of 10m, age 32m of 10m"; d.Reason != want {
		t.Fatalf("reason %q, want %q", d.Reason, want)
	}
}

func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 10 * time.Second: "10s", 2 * time.Minute: "2m", 90 * time.Second: "1m30s",
		time.Hour: "1h", time.Hour + time.Minute: "1h1m", 1500 * time.Millisecond: "2s",
	} {
		if got := short(d); got != want {
			t.Errorf("short(%v) = %q, want %q", d, got, want)
		}
	}
}
