package fleet

import (
	"reflect"
	"testing"

	"github.com/prometheus/procfs"
)

func TestMembership(t *testing.T) {
	cases := []struct {
		name string
		in   []procfs.Cgroup
		want procCgroups
	}{
		{
			name: "hybrid",
			in: []procfs.Cgroup{
				{HierarchyID: 6, Controllers: []string{"freezer"}, Path: "/sandsim-1/cube_sandbox/sandbox/2"},
				{HierarchyID: 2, Controllers: []string{"cpu", "cpuacct"}, Path: "/"},
				{HierarchyID: 0, Path: "/sandsim-1/cube_sandbox/sandbox/2"},
			},
			want: procCgroups{Unified: "/sandsim-1/cube_sandbox/sandbox/2", V1: map[string]string{
				"freezer": "/sandsim-1/cube_sandbox/sandbox/2", "cpu": "/", "cpuacct": "/"}},
		},
		{
			name: "pure v2",
			in:   []procfs.Cgroup{{Path: "/system.slice/docker-abc.scope"}},
			want: procCgroups{Unified: "/system.slice/docker-abc.scope", V1: map[string]string{}},
		},
		{
			name: "named v1 hierarchy only",
			in:   []procfs.Cgroup{{HierarchyID: 9, Controllers: []string{"name=systemd"}, Path: "/user.slice"}},
			want: procCgroups{V1: map[string]string{"name=systemd": "/user.slice"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := membership(c.in); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestFindCgroupMounts(t *testing.T) {
	v1 := func(point, ctrl string) *procfs.MountInfo {
		return &procfs.MountInfo{Root: "/", MountPoint: point, FSType: "cgroup", SuperOptions: map[string]string{"rw": "", ctrl: ""}}
	}
	cases := []struct {
		name   string
		mounts []*procfs.MountInfo
		want   cgroupMounts
	}{
		{
			name: "hybrid",
			mounts: []*procfs.MountInfo{
				v1("/sys/fs/cgroup/cpu", "cpu"),
				v1("/sys/fs/cgroup/freezer", "freezer"),
				{Root: "/", MountPoint: "/sys/fs/cgroup/unified", FSType: "cgroup2"},
			},
			want: cgroupMounts{Unified: "/sys/fs/cgroup/unified", UnifiedRoot: "/", Freezer: "/sys/fs/cgroup/freezer", FreezerRoot: "/"},
		},
		{
			name:   "pure v2 in a cgroup namespace",
			mounts: []*procfs.MountInfo{{Root: "/kubepods/pod1", MountPoint: "/sys/fs/cgroup", FSType: "cgroup2"}},
			want:   cgroupMounts{Unified: "/sys/fs/cgroup", UnifiedRoot: "/kubepods/pod1"},
		},
		{name: "none", mounts: []*procfs.MountInfo{{MountPoint: "/", FSType: "ext4"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := findCgroupMounts(c.mounts); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestHierarchyPaths(t *testing.T) {
	h := &hierarchy{mount: "/sys/fs/cgroup", mountRoot: "/kubepods/pod1"}
	if got := h.path("/sys/fs/cgroup/sandsim-7/boxlite/x"); got != "/kubepods/pod1/sandsim-7/boxlite/x" {
		t.Errorf("path = %s", got)
	}
	if got := h.path("/sys/fs/cgroup"); got != "/kubepods/pod1" {
		t.Errorf("path of the mount point = %s", got)
	}
}
