package proc

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseCgroupEvents(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want CgroupState
	}{
		{name: "running", in: "populated 1\nfrozen 0\n", want: CgroupState{Exists: true, Populated: true}},
		{name: "frozen", in: "populated 1\nfrozen 1\n", want: CgroupState{Exists: true, Populated: true, Frozen: true}},
		{name: "empty cgroup", in: "populated 0\nfrozen 0\n", want: CgroupState{Exists: true}},
		{name: "older kernel without frozen", in: "populated 1\n", want: CgroupState{Exists: true, Populated: true}},
		{name: "unknown keys ignored", in: "frozen 1\nsomething 7\npopulated 1\n", want: CgroupState{Exists: true, Populated: true, Frozen: true}},
		{name: "empty file", in: "", want: CgroupState{Exists: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseCgroupEvents([]byte(tt.in)); got != tt.want {
				t.Errorf("parseCgroupEvents(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseFreezerState(t *testing.T) {
	for in, frozen := range map[string]bool{"THAWED\n": false, "FREEZING\n": true, "FROZEN\n": true, "": false} {
		t.Run(in, func(t *testing.T) {
			want := CgroupState{Exists: true, Populated: true, Frozen: frozen}
			if got := parseFreezerState([]byte(in)); got != want {
				t.Errorf("parseFreezerState(%q) = %+v, want %+v", in, got, want)
			}
		})
	}
}

func TestReadCgroupState(t *testing.T) {
	unified := filepath.Join(hostRoot, "sys/fs/cgroup/unified")
	freezer := filepath.Join(hostRoot, "sys/fs/cgroup/freezer")
	tests := []struct {
		name   string
		dir    string
		v1     bool
		want   CgroupState
		errors bool
	}{
		{name: "v2 frozen", dir: unified + "/sandboxes/box1", want: CgroupState{Exists: true, Populated: true, Frozen: true}},
		{name: "v2 empty", dir: unified + "/sandboxes/empty", want: CgroupState{Exists: true}},
		{name: "v2 root has no cgroup.events", dir: unified, want: CgroupState{Exists: true, Populated: true}},
		{name: "v2 removed", dir: unified + "/sandboxes/gone", want: CgroupState{}},
		{name: "no directory", dir: "", want: CgroupState{}},
		{name: "v1 FREEZING", dir: freezer + "/box1", v1: true, want: CgroupState{Exists: true, Populated: true, Frozen: true}},
		{name: "v1 FROZEN", dir: freezer + "/frozen", v1: true, want: CgroupState{Exists: true, Populated: true, Frozen: true}},
		{name: "v1 THAWED", dir: freezer + "/thawed", v1: true, want: CgroupState{Exists: true, Populated: true}},
		{name: "v1 root has no freezer.state", dir: freezer, v1: true, want: CgroupState{Exists: true, Populated: true}},
		{name: "v1 removed", dir: freezer + "/gone", v1: true, want: CgroupState{}},
		// cgroup.events is a directory here: a read error that is not ENOENT.
		{name: "unreadable", dir: t.TempDir(), errors: true},
	}
	if err := os.Mkdir(filepath.Join(tests[len(tests)-1].dir, "cgroup.events"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadCgroupState(tt.dir, tt.v1)
			if (err != nil) != tt.errors {
				t.Fatalf("ReadCgroupState(%q) error = %v, want error %v", tt.dir, err, tt.errors)
			}
			if got != tt.want {
				t.Errorf("ReadCgroupState(%q) = %+v, want %+v", tt.dir, got, tt.want)
			}
		})
	}
}

func TestReadCgroupProcs(t *testing.T) {
	tests := []struct {
		name     string
		dir      string
		want     []int
		vanished bool
	}{
		{name: "v2", dir: filepath.Join(hostRoot, "sys/fs/cgroup/unified/sandboxes/box1"), want: []int{300, 301, 302}},
		{name: "v1 with a duplicate", dir: filepath.Join(hostRoot, "sys/fs/cgroup/freezer/box1"), want: []int{300, 301, 302}},
		{name: "removed cgroup", dir: filepath.Join(hostRoot, "sys/fs/cgroup/unified/gone"), vanished: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadCgroupProcs(tt.dir)
			if tt.vanished {
				if !IsVanished(err) {
					t.Fatalf("ReadCgroupProcs(%q) error = %v, want a vanished error", tt.dir, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ReadCgroupProcs(%q) = %v, %v; want %v", tt.dir, got, err, tt.want)
			}
		})
	}
}

func TestParseCgroupProcs(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []int
		wantErr bool
	}{
		{name: "empty cgroup", in: "", want: nil},
		{name: "unsorted with duplicates", in: "30\n7\n30\n", want: []int{7, 30}},
		{name: "garbage", in: "7\nx\n", wantErr: true},
		{name: "zero is no pid", in: "0\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendCgroupProcs(nil, []byte(tt.in))
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("appendCgroupProcs(nil, %q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
