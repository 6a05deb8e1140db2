package proc

import (
	"os"
	"strings"
	"testing"
)

func TestFindMounts(t *testing.T) {
	const (
		rootFS  = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
		cgTmpfs = "31 22 0:28 / /sys/fs/cgroup rw,relatime shared:3 - tmpfs tmpfs rw,mode=755\n"
	)
	tests := []struct {
		name    string
		info    string
		want    Mounts
		wantErr bool
	}{
		{
			name: "hybrid: v1 controllers and cgroup2 under unified",
			info: rootFS + cgTmpfs +
				"32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:4 - cgroup cgroup rw,cpu,cpuacct\n" +
				"37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime shared:9 - cgroup cgroup rw,freezer\n" +
				"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:13 - cgroup2 cgroup2 rw,nsdelegate\n",
			want: Mounts{Unified: "/sys/fs/cgroup/unified", UnifiedRoot: "/", Freezer: "/sys/fs/cgroup/freezer", FreezerRoot: "/",
				V1: V1Mounts{CPU: "/sys/fs/cgroup/cpu,cpuacct", CPUAcct: "/sys/fs/cgroup/cpu,cpuacct"}},
		},
		{
			name: "pure v2",
			info: rootFS + "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
			want: Mounts{Unified: "/sys/fs/cgroup", UnifiedRoot: "/"},
		},
		{
			name: "v1 only, freezer co-mounted, no optional fields",
			info: rootFS + cgTmpfs + "36 31 0:33 / /sys/fs/cgroup/devices,freezer rw,relatime - cgroup cgroup rw,devices,freezer\n",
			want: Mounts{Freezer: "/sys/fs/cgroup/devices,freezer", FreezerRoot: "/"},
		},
		{
			name: "no cgroups at all",
			info: rootFS + "23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n",
			want: Mounts{},
		},
		{
			name: "v1 resource controllers, and a subtree bind mount that does not count",
			info: rootFS + cgTmpfs +
				"34 31 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
				"35 31 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n" +
				"36 31 0:36 /box /run/box/blkio rw,relatime - cgroup cgroup rw,blkio\n",
			want: Mounts{V1: V1Mounts{Memory: "/sys/fs/cgroup/memory", PIDs: "/sys/fs/cgroup/pids"}},
		},
		{
			name: "a v1 hierarchy named freezer-ish is not the freezer",
			info: rootFS + "40 22 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=freezerd\n",
			want: Mounts{},
		},
		{
			name: "escaped space in the mount point",
			info: rootFS + "41 22 0:38 / /mnt/cgroup\\040v2 rw,relatime - cgroup2 cgroup2 rw\n",
			want: Mounts{Unified: "/mnt/cgroup v2", UnifiedRoot: "/"},
		},
		{
			name: "a whole-hierarchy mount wins over an earlier subtree bind mount",
			info: rootFS +
				"50 22 0:38 /box1 /run/box1/cgroup rw,relatime - cgroup2 cgroup2 rw\n" +
				"51 22 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n" +
				"52 22 0:38 / /mnt/again rw,relatime - cgroup2 cgroup2 rw\n",
			want: Mounts{Unified: "/sys/fs/cgroup", UnifiedRoot: "/"},
		},
		{
			name: "only a subtree is mounted",
			info: rootFS + "50 22 0:38 /lxc/c1 /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n",
			want: Mounts{Unified: "/sys/fs/cgroup", UnifiedRoot: "/lxc/c1"},
		},
		{
			name:    "line without the separator",
			info:    rootFS + "41 22 0:38 / /sys/fs/cgroup rw,relatime cgroup2 cgroup2 rw\n",
			wantErr: true,
		},
		{
			name:    "truncated after the separator",
			info:    "41 22 0:38 / /sys/fs/cgroup rw,relatime - cgroup2\n",
			wantErr: true,
		},
		{name: "empty", info: "", want: Mounts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindMounts([]byte(tt.info))
			if (err != nil) != tt.wantErr {
				t.Fatalf("FindMounts error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("FindMounts = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestFindMountsLive parses this host's own mountinfo: it must parse, and
// agree with a plain text search for a cgroup2 line.
func TestFindMountsLive(t *testing.T) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skipf("no /proc/self/mountinfo: %v", err)
	}
	m, err := FindMounts(data)
	if err != nil {
		t.Fatalf("FindMounts(/proc/self/mountinfo): %v", err)
	}
	if has := strings.Contains(string(data), " - cgroup2 "); has != (m.Unified != "") {
		t.Errorf("cgroup2 in mountinfo = %v, but Unified = %q", has, m.Unified)
	}
	if m.Unified != "" {
		if _, err := os.Stat(m.V2Dir("/") + "/cgroup.procs"); err != nil {
			t.Errorf("V2Dir(/) = %q has no cgroup.procs: %v", m.V2Dir("/"), err)
		}
	}
}

func TestCgroupDirs(t *testing.T) {
	whole := Mounts{Unified: "/sys/fs/cgroup/unified", UnifiedRoot: "/", Freezer: "/sys/fs/cgroup/freezer"}
	subtree := Mounts{Unified: "/sys/fs/cgroup", UnifiedRoot: "/lxc/c1", Freezer: "/f", FreezerRoot: "/lxc/c1"}
	tests := []struct {
		name        string
		m           Mounts
		path        string
		v2, freezer string
	}{
		{name: "root", m: whole, path: "/", v2: "/sys/fs/cgroup/unified", freezer: "/sys/fs/cgroup/freezer"},
		{name: "nested", m: whole, path: "/sandboxes/box1", v2: "/sys/fs/cgroup/unified/sandboxes/box1", freezer: "/sys/fs/cgroup/freezer/sandboxes/box1"},
		{name: "outside our cgroup namespace", m: whole, path: "/../../system.slice/x", v2: "", freezer: ""},
		{name: "relative path", m: whole, path: "sandboxes", v2: "", freezer: ""},
		{name: "empty path", m: whole, path: "", v2: "", freezer: ""},
		{name: "no mounts", m: Mounts{}, path: "/sandboxes/box1", v2: "", freezer: ""},
		{name: "subtree mount: inside", m: subtree, path: "/lxc/c1/box", v2: "/sys/fs/cgroup/box", freezer: "/f/box"},
		{name: "subtree mount: its root", m: subtree, path: "/lxc/c1", v2: "/sys/fs/cgroup", freezer: "/f"},
		{name: "subtree mount: a sibling with a common prefix", m: subtree, path: "/lxc/c10", v2: "", freezer: ""},
		{name: "subtree mount: outside", m: subtree, path: "/system.slice", v2: "", freezer: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.V2Dir(tt.path); got != tt.v2 {
				t.Errorf("V2Dir(%q) = %q, want %q", tt.path, got, tt.v2)
			}
			if got := tt.m.FreezerDir(tt.path); got != tt.freezer {
				t.Errorf("FreezerDir(%q) = %q, want %q", tt.path, got, tt.freezer)
			}
		})
	}
}

func TestUnescapeMountField(t *testing.T) {
	tests := map[string]string{
		`/plain`:                  "/plain",
		`/a\040b`:                 "/a b",
		`/tab\011nl\012bs\134end`: "/tab\tnl\nbs\\end",
		`/short\04`:               `/short\04`,
		`/notoctal\089`:           `/notoctal\089`,
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if got := unescapeMountField(in); got != want {
				t.Errorf("unescapeMountField(%q) = %q, want %q", in, got, want)
			}
		})
	}
}
