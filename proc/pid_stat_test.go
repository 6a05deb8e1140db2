package proc

import (
	"errors"
	"testing"

	"github.com/prometheus/procfs"
)

func TestParseStat(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	tests := []struct {
		name string
		line string
		want procfs.ProcStat
		bad  bool
	}{
		{
			name: "ordinary process",
			line: "4242 (sleep) S 1 4242 4242 34816 4242 4194560 100 0 0 0 12 34 0 0 20 0 1 0 987654 1000 25 18446744073709551615 94000000000000" + tail,
			want: procfs.ProcStat{PID: 4242, Comm: "sleep", State: "S", PPID: 1, PGRP: 4242, Session: 4242,
				Flags: 4194560, UTime: 12, STime: 34, NumThreads: 1, Starttime: 987654, RSS: 25, StartCode: 94000000000000},
		},
		{
			// prctl(PR_SET_NAME) takes any bytes: the fields start after the last ')'.
			name: "comm with spaces and parentheses",
			line: "7 (a) b (c)) Z 6 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 70 0 0 18446744073709551615 0" + tail,
			want: procfs.ProcStat{PID: 7, Comm: "a) b (c)", State: "Z", PPID: 6, PGRP: 7, Session: 7,
				Flags: 4194560, NumThreads: 1, Starttime: 70},
		},
		{
			name: "kernel worker with its workqueue",
			line: "33 (kworker/u8:1-kvfree_rcu_reclaim) I 2 0 0 0 -1 69238880 0 0 0 0 0 5 0 0 20 0 1 0 120 0 0 18446744073709551615 1" + tail,
			want: procfs.ProcStat{PID: 33, Comm: "kworker/u8:1-kvfree_rcu_reclaim", State: "I", PPID: 2,
				Flags: 69238880, STime: 5, NumThreads: 1, Starttime: 120, StartCode: 1},
		},
		{name: "no comm", line: "12 sleep S 1 12 12", bad: true},
		{name: "too few fields", line: "12 (sleep) S 1 12 12 0 -1 4194560\n", bad: true},
		{name: "two-letter state", line: "12 (sleep) SS 1 12 12 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0 0 0" + tail, bad: true},
		{name: "negative where unsigned", line: "12 (sleep) S -1 12 12 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0 0 0" + tail, bad: true},
		{name: "pid not a number", line: "x (sleep) S 1 12 12 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0 0 0" + tail, bad: true},
		{name: "empty", line: "", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st procfs.ProcStat
			err := parseStat([]byte(tt.line), &st)
			if tt.bad {
				if !errors.Is(err, errStatMalformed) {
					t.Fatalf("parseStat = %+v, %v; want errStatMalformed", st, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseStat: %v", err)
			}
			if st != tt.want {
				t.Errorf("parseStat =\n %+v\nwant\n %+v", st, tt.want)
			}
		})
	}
}

// TestParseStatAllocs proves the hot path's parse allocates nothing once the
// task name is known, and one string when it changed.
func TestParseStatAllocs(t *testing.T) {
	line := []byte("4242 (sleep) S 1 4242 4242 34816 4242 4194560 100 0 0 0 12 34 0 0 20 0 1 0 987654 1000 25 18446744073709551615 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
	st := procfs.ProcStat{Comm: "sleep"}
	if n := testing.AllocsPerRun(100, func() {
		if err := parseStat(line, &st); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("parseStat with a known comm: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		st.Comm = "other"
		if err := parseStat(line, &st); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("parseStat with a new comm: %v allocations, want 1", n)
	}
}

func TestParseUint(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false},
		{"", 0, false},
		{"-1", 0, false},
		{"12a", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parseUint([]byte(tt.in))
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseUint(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}
