package proc

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The fixtures are real files' shapes (proc(5)); the live host's are read
// by TestReadHostLive.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "hostmeters", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseLoadavg(t *testing.T) {
	l, err := ParseLoadavg(fixture(t, "loadavg"))
	if err != nil || l != [3]float64{0.52, 0.40, 1.33} {
		t.Errorf("got %v %v", l, err)
	}
	for _, bad := range []string{"", "0.5 0.4", "x 0.4 0.3 1/2 3"} {
		if _, err := ParseLoadavg([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	total, avail, err := ParseMeminfo(fixture(t, "meminfo"))
	if err != nil || total != 8029624<<10 || avail != 5214532<<10 {
		t.Errorf("got %d %d %v", total, avail, err)
	}
	// Before Linux 3.14: free + buffers + cached.
	total, avail, err = ParseMeminfo(fixture(t, "meminfo-3.13"))
	if err != nil || total != 8029624<<10 || avail != (331264+190740+4310840)<<10 {
		t.Errorf("3.13: got %d %d %v", total, avail, err)
	}
	if _, _, err := ParseMeminfo([]byte("MemFree: 1 kB\n")); err == nil {
		t.Error("no MemTotal parsed")
	}
}

func TestParseStatCPU(t *testing.T) {
	c, err := ParseStatCPU(fixture(t, "stat"))
	// user nice system idle iowait irq softirq steal; guest* not added.
	if want := (CPUTimes{Busy: 4705 + 356 + 584 + 23 + 0 + 5, Total: 4705 + 356 + 584 + 3699 + 23 + 23 + 0 + 5}); err != nil || c != want {
		t.Errorf("got %+v %v, want %+v", c, err, want)
	}
	if _, err := ParseStatCPU([]byte("cpu0 1 2 3 4 5\n")); err == nil {
		t.Error("no aggregate line parsed")
	}
	next := CPUTimes{Busy: c.Busy + 25, Total: c.Total + 100}
	if p, ok := next.BusyPercent(c); !ok || p != 25 {
		t.Errorf("busy %v %v, want 25", p, ok)
	}
	if _, ok := c.BusyPercent(c); ok {
		t.Error("a percent over no time")
	}
}

func TestReadHost(t *testing.T) {
	h, err := ReadHost(func(name string) ([]byte, error) { return fixture(t, name), nil })
	if err != nil || h.Load[0] != 0.52 || h.MemTotal != 8029624<<10 || h.CPU.Total == 0 {
		t.Errorf("got %+v %v", h, err)
	}
	if _, err := ReadHost(func(string) ([]byte, error) { return nil, errors.New("gone") }); err == nil {
		t.Error("no error from a failing reader")
	}
}

func TestReadHostLive(t *testing.T) {
	h, err := ReadHost(func(name string) ([]byte, error) { return os.ReadFile(filepath.Join("/proc", name)) })
	if err != nil {
		t.Fatal(err)
	}
	if h.MemTotal == 0 || h.MemAvailable > h.MemTotal || h.CPU.Busy > h.CPU.Total || h.CPU.Total == 0 {
		t.Errorf("implausible host: %+v", h)
	}
}
