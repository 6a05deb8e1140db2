package recording

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandtop/sandtop/proc"
)

// Header is the first frame of a recording: what is needed to read the
// frames and to group them as the recorder would have. The format version
// is in the preamble, before it.
type Header struct {
	// FormatVersion is the preamble's version (not part of the JSON).
	FormatVersion uint32 `json:"-"`
	// Version is the sandtop version that recorded.
	Version string `json:"sandtop_version"`
	// Recorder says what recorded: "sandtop record" or "sandtop (live screen)".
	Recorder string `json:"recorder"`
	Host     string `json:"host"`
	// BootID is /proc/sys/kernel/random/boot_id: two recordings with the
	// same boot ID saw the same boot, so their identities compare.
	BootID     string    `json:"boot_id"`
	BootTime   time.Time `json:"boot_time"`
	ClockTicks uint64    `json:"clock_ticks"`
	PageSize   uint64    `json:"page_size"`
	// SelfPID is the recorder's pid, which grouping leaves out as it does
	// sandtop's own.
	SelfPID int    `json:"self_pid"`
	Mounts  mounts `json:"cgroup_mounts"`
	// Started is when recording began.
	Started time.Time `json:"started"`
	// Interval is the time asked between frames; KeyEvery between key frames.
	Interval time.Duration `json:"interval_ns"`
	KeyEvery time.Duration `json:"key_every_ns"`
	// Rules are the rules in effect, as a rules file (model.Rules.WriteTOML).
	Rules string `json:"rules"`
}

// mounts is proc.Mounts with the JSON names of the format.
type mounts struct {
	Unified     string `json:"unified"`
	UnifiedRoot string `json:"unified_root"`
	Freezer     string `json:"freezer"`
	FreezerRoot string `json:"freezer_root"`
}

func (m mounts) proc() proc.Mounts {
	return proc.Mounts{Unified: m.Unified, UnifiedRoot: m.UnifiedRoot, Freezer: m.Freezer, FreezerRoot: m.FreezerRoot}
}

// NewHeader describes a recording of the host whose first snapshot is snap,
// read from procRoot. rules is the rules file text in effect.
func NewHeader(snap *proc.Snapshot, procRoot, version, recorder, rules string, interval, keyEvery time.Duration) *Header {
	return &Header{
		FormatVersion: FormatVersion,
		Version:       version,
		Recorder:      recorder,
		Host:          snap.Hostname,
		BootID:        readBootID(procRoot),
		BootTime:      snap.BootTime,
		ClockTicks:    snap.ClockTicks,
		PageSize:      snap.PageSize,
		SelfPID:       snap.Self,
		Mounts: mounts{
			Unified: snap.Mounts.Unified, UnifiedRoot: snap.Mounts.UnifiedRoot,
			Freezer: snap.Mounts.Freezer, FreezerRoot: snap.Mounts.FreezerRoot,
		},
		Started:  snap.Time,
		Interval: interval,
		KeyEvery: keyEvery,
		Rules:    rules,
	}
}

// readBootID reads the kernel's boot ID (random(4)); "" when unreadable.
func readBootID(procRoot string) string {
	b, err := os.ReadFile(filepath.Join(procRoot, "sys", "kernel", "random", "boot_id"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
