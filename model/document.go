package model

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"time"

	"github.com/sandtop/sandtop/proc"
)

// Document is the stable JSON form of a view (`sandtop list --json`). Field
// names and meanings are documented in docs/json.md; add fields, never rename.
type Document struct {
	Time      time.Time     `json:"time"`
	Host      string        `json:"host"`
	Sandboxes []SandboxJSON `json:"sandboxes"`
	// Unattributed counts user-space processes in no sandbox.
	Unattributed int `json:"unattributed"`
	// UnattributedProcesses lists them, only when asked for (--all).
	UnattributedProcesses []ProcessJSON `json:"unattributed_processes,omitempty"`
	// PartlyUnreadable counts processes some of whose fields could not be read.
	PartlyUnreadable int `json:"partly_unreadable"`
	// PartlyUnreadablePIDs names them, so that the count can be followed
	// up (the live screen's filter has the term "unreadable" too).
	PartlyUnreadablePIDs []int `json:"partly_unreadable_pids"`
}

// SandboxJSON is one sandbox in a Document.
type SandboxJSON struct {
	ID      string `json:"id"`
	Runtime string `json:"runtime"`
	// Namespace is the runtime's namespace ("" when it has none); Name is
	// "namespace/id" (or the ID), Key "runtime:namespace/id": the
	// sandbox's identity, unique in the document.
	Namespace     string `json:"namespace"`
	Name          string `json:"name"`
	Key           string `json:"key"`
	CgroupOnly    bool   `json:"cgroup_only"`
	RootPID       int    `json:"root_pid"`
	SupervisorPID int    `json:"supervisor_pid"`
	Supervisor    string `json:"supervisor"`
	Cgroup        string `json:"cgroup"`
	Freezer       string `json:"freezer_cgroup"`
	Frozen        bool   `json:"frozen"`
	// Paused says which part of a paused sandbox is frozen or stopped.
	Paused  string   `json:"paused"`
	Badges  []Badge  `json:"badges"`
	Cleanup []string `json:"cleanup"`
	// Conflicts are claims that contradict where a process lives.
	Conflicts []string `json:"conflicts,omitempty"`
	// CleanupRefused says why a rule's cleanup path was not made.
	CleanupRefused []string `json:"cleanup_refused,omitempty"`
	// Reconcile is the runtime's own command to run after a kill (empty
	// when the runtime notices by itself).
	Reconcile []string      `json:"reconcile"`
	Processes []ProcessJSON `json:"processes"`
	// Leftovers lists what a sandbox with no process left still holds.
	Leftovers []LeftoverJSON `json:"leftovers,omitempty"`
	// Resources is what the sandbox uses and may use; null for one with
	// no process left.
	Resources *ResourcesJSON `json:"resources"`
	// Network is the sandbox's network namespaces, when they were read.
	Network []NetworkJSON `json:"network,omitempty"`
	// Trouble is the evidence for the badges oom, stuck and hollow.
	Trouble *TroubleJSON `json:"trouble,omitempty"`
	// Containers are the containers inside a pod (Sandbox.Containers).
	Containers []ContainerJSON `json:"containers,omitempty"`
}

// NetworkJSON is one network namespace of a sandbox in a Document.
type NetworkJSON struct {
	NetnsInode uint64 `json:"netns_inode"`
	NetnsName  string `json:"netns_name"`
	Host       bool   `json:"host"`
	// Listeners is nil for the host's namespace, whose listeners are not
	// the sandbox's.
	Listeners []ListenerJSON `json:"listeners"`
	Error     string         `json:"error,omitempty"`
}

// ListenerJSON is a listening socket of a network namespace.
type ListenerJSON struct {
	Proto   string `json:"proto"`
	Address string `json:"address"`
	Inode   uint64 `json:"inode"`
}

// ResourcesJSON is a sandbox's Resources in a Document. A figure its
// cgroup does not have is null, and so is a limit it does not set.
type ResourcesJSON struct {
	CPUSeconds       float64      `json:"cpu_seconds"`
	MemoryBytes      uint64       `json:"memory_bytes"`
	MemoryPeakBytes  *uint64      `json:"memory_peak_bytes"`
	MemoryLimitBytes *uint64      `json:"memory_limit_bytes"`
	CPULimitCores    *float64     `json:"cpu_limit_cores"`
	PIDs             uint64       `json:"pids"`
	PIDsLimit        *uint64      `json:"pids_limit"`
	IOReadBytes      *uint64      `json:"io_read_bytes"`
	IOWriteBytes     *uint64      `json:"io_write_bytes"`
	OOMKills         *uint64      `json:"oom_kills"`
	Pressure         PressureJSON `json:"pressure"`
	// Source is "cgroup" or "processes": where the workload's CPU and
	// memory come from.
	Source   string   `json:"source"`
	Overhead PartJSON `json:"overhead"`
	Workload PartJSON `json:"workload"`
	// WorkloadIs says what the workload is (for a VM: the guest as the
	// host sees it).
	WorkloadIs string `json:"workload_is"`
}

// PressureJSON is some avg10 of each pressure file, in percent.
type PressureJSON struct {
	CPU    *float64 `json:"cpu"`
	Memory *float64 `json:"memory"`
	IO     *float64 `json:"io"`
}

// PartJSON is one side of a sandbox's split.
type PartJSON struct {
	CPUSeconds  float64 `json:"cpu_seconds"`
	MemoryBytes uint64  `json:"memory_bytes"`
	Processes   int     `json:"processes"`
}

// TroubleJSON is a sandbox's Trouble in a Document.
type TroubleJSON struct {
	OOM    []OOMJSON   `json:"oom,omitempty"`
	Stuck  []StuckJSON `json:"stuck,omitempty"`
	Hollow string      `json:"hollow,omitempty"`
}

// OOMJSON is one OOMEvidence.
type OOMJSON struct {
	Source string    `json:"source"`
	Time   time.Time `json:"time"`
	Kills  uint64    `json:"kills"`
	PID    int       `json:"pid,omitempty"`
	Comm   string    `json:"comm,omitempty"`
	Host   bool      `json:"host_oom"`
	VMM    bool      `json:"vmm"`
	Detail string    `json:"detail"`
}

// StuckJSON is one StuckEvidence.
type StuckJSON struct {
	PID          int     `json:"pid"`
	Comm         string  `json:"comm"`
	Wchan        string  `json:"wchan"`
	StuckSeconds float64 `json:"stuck_seconds"`
}

// ContainerJSON is one container of a pod in a Document: its ID, its own
// cgroup and its processes' pids (each also in the sandbox's processes).
type ContainerJSON struct {
	ID     string `json:"id"`
	Cgroup string `json:"cgroup"`
	PIDs   []int  `json:"pids"`
}

// LeftoverJSON is one leftover in a Document.
type LeftoverJSON struct {
	Kind string `json:"kind"`
	// Path is a filesystem path, a cgroup's path, or a link's name.
	Path string `json:"path"`
	// Netns is the named network namespace a link lives in; Hierarchy a
	// cgroup's hierarchy when found in several; MountNSPID a process in
	// the mount namespace a mount is in, when not sandtop's own.
	Netns      string `json:"netns,omitempty"`
	Hierarchy  string `json:"hierarchy,omitempty"`
	MountNSPID int    `json:"mount_ns_pid,omitempty"`
	// HeldBy are the processes using it (in a netns, holding a tap open,
	// working in a mount).
	HeldBy     []int   `json:"held_by,omitempty"`
	AgeSeconds float64 `json:"age_seconds"`
	// Why says what makes it the sandbox's; Keep, when set, why it is
	// reported and not removed.
	Why  string `json:"why"`
	Keep string `json:"keep,omitempty"`
}

// ProcessJSON is one process in a Document.
type ProcessJSON struct {
	PID   int      `json:"pid"`
	PPID  int      `json:"ppid"`
	PGID  int      `json:"pgid"`
	SID   int      `json:"sid"`
	UID   int      `json:"uid"`
	State string   `json:"state"`
	Comm  string   `json:"comm"`
	Argv  []string `json:"argv"`
	// ArgsTruncated is set when the command line was longer than sandtop
	// keeps (proc.MaxArgvBytes): argv is its start.
	ArgsTruncated bool      `json:"args_truncated,omitempty"`
	StartTime     time.Time `json:"start_time"`
	StartTicks    uint64    `json:"start_ticks"`
	CPUSeconds    float64   `json:"cpu_seconds"`
	RSSBytes      uint64    `json:"rss_bytes"`
	Threads       int       `json:"threads"`
	// Escaped is set for a process that left its sandbox's tree (see
	// model.Member.Escaped).
	Escaped bool `json:"escaped"`
	// Orphan is Escaped under the name earlier versions wrote it by: the
	// document's fields are added, never renamed, so readers of those
	// still find it. It says nothing of the supervisor (that is the
	// sandbox's orphan badge).
	Orphan bool `json:"orphan"`
	Zombie bool `json:"zombie"`
	// PartlyUnreadable is set when some field could not be read.
	PartlyUnreadable bool `json:"partly_unreadable"`
}

// Encode writes the document as `sandtop list --json` prints it: indented
// JSON and a newline, the bytes json.Encoder with a two-space indent
// writes. Every other endpoint that hands out the document calls this (or
// View.EncodeDocument, which writes the same bytes), so they all print the
// same bytes. The arrays are written an element at a time: at 10,000
// processes the text is 5.7 MB, which encoding in one piece held in memory
// (more while its buffer grew) on top of the document.
func (d Document) Encode(w io.Writer) error {
	return d.encode(w, elementsOf(d.Sandboxes), elementsOf(d.UnattributedProcesses))
}

// EncodeDocument writes v.Document(all) as Document.Encode does, byte for
// byte, without making the document: each sandbox is converted as it is
// written, so only one sandbox's JSON form is held at a time (at 10,000
// processes the whole document was another 25% of `list --json`'s heap).
func (v *View) EncodeDocument(w io.Writer, all bool) error {
	d := v.documentHead()
	// Each sandbox's processes are written before the next is converted,
	// so one array holds them all in turn.
	var procs []ProcessJSON
	sandboxes := elements{n: len(v.Sandboxes), at: func(i int) any {
		s := v.sandboxJSON(v.Sandboxes[i], procs[:0])
		procs = s.Processes
		return s
	}}
	var unattributed elements
	if all && len(v.Unattributed) > 0 {
		unattributed = elements{n: len(v.Unattributed), at: func(i int) any { return v.processJSON(v.Unattributed[i]) }}
	}
	return d.encode(w, sandboxes, unattributed)
}

// elements is an array of the document written an element at a time; a
// nil at is a nil (or absent) array.
type elements struct {
	n  int
	at func(i int) any
}

func elementsOf[T any](xs []T) elements {
	if xs == nil {
		return elements{}
	}
	return elements{n: len(xs), at: func(i int) any { return xs[i] }}
}

// encode writes d with the given arrays in place of its own Sandboxes and
// UnattributedProcesses.
func (d Document) encode(w io.Writer, sandboxes, unattributed elements) error {
	head := d
	head.Sandboxes, head.UnattributedProcesses = nil, nil
	b, err := json.MarshalIndent(head, "", "  ")
	if err != nil {
		return err
	}
	// Keys are written unescaped and values escaped, so these can only be
	// the fields themselves.
	const sandboxesKey, unattributedKey = "\n  \"sandboxes\": ", "\n  \"unattributed\": "
	i := bytes.Index(b, []byte(sandboxesKey+"null"))
	j := bytes.Index(b, []byte(unattributedKey))
	if i < 0 || j < i {
		return errors.New("encode document: fields out of place")
	}
	// The line of "unattributed" ends with its comma: partly_unreadable
	// follows.
	j += len(unattributedKey) + bytes.IndexByte(b[j+len(unattributedKey):], '\n')
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.Write(b[:i+len(sandboxesKey)])
	if err := writeArray(bw, sandboxes); err != nil {
		return err
	}
	bw.Write(b[i+len(sandboxesKey)+len("null") : j])
	if unattributed.n > 0 {
		bw.WriteString("\n  \"unattributed_processes\": ")
		if err := writeArray(bw, unattributed); err != nil {
			return err
		}
		bw.WriteByte(',')
	}
	bw.Write(b[j:])
	bw.WriteByte('\n')
	return bw.Flush()
}

// writeArray writes xs as a field of the document's top level, indented as
// json.Encoder would. The elements go through one Encoder and one buffer,
// which both keep their memory from one element to the next: a
// MarshalIndent per element allocated its text three times over (12.5 MB
// for 5.7 MB of text at 10,000 processes).
func writeArray(bw *bufio.Writer, xs elements) error {
	if xs.at == nil {
		_, err := bw.WriteString("null")
		return err
	}
	if xs.n == 0 {
		_, err := bw.WriteString("[]")
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("    ", "  ")
	bw.WriteByte('[')
	for k := range xs.n {
		buf.Reset()
		if err := enc.Encode(xs.at(k)); err != nil {
			return err
		}
		bw.WriteString("\n    ")
		// What MarshalIndent returns, and the newline Encode ends a
		// value with.
		bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}))
		if k < xs.n-1 {
			bw.WriteByte(',')
		}
	}
	_, err := bw.WriteString("\n  ]")
	return err
}

// Document converts the view. With all, the unattributed processes are
// listed too.
func (v *View) Document(all bool) Document {
	d := v.documentHead()
	d.Sandboxes = make([]SandboxJSON, 0, len(v.Sandboxes))
	for _, sb := range v.Sandboxes {
		d.Sandboxes = append(d.Sandboxes, v.sandboxJSON(sb, nil))
	}
	if all {
		for _, p := range v.Unattributed {
			d.UnattributedProcesses = append(d.UnattributedProcesses, v.processJSON(p))
		}
	}
	return d
}

// documentHead is the document without its arrays of sandboxes and
// unattributed processes.
func (v *View) documentHead() Document {
	d := Document{
		Time:                 v.Time.UTC().Truncate(time.Second),
		Host:                 v.Host,
		Unattributed:         len(v.Unattributed),
		PartlyUnreadable:     v.Snapshot.PartlyUnreadable,
		PartlyUnreadablePIDs: []int{},
	}
	for _, p := range v.Snapshot.Procs {
		if p.Partial {
			d.PartlyUnreadablePIDs = append(d.PartlyUnreadablePIDs, p.PID)
		}
	}
	return d
}

// sandboxJSON converts sb, appending its processes to procs (which may be
// nil) for Processes.
func (v *View) sandboxJSON(sb *Sandbox, procs []ProcessJSON) SandboxJSON {
	s := SandboxJSON{
		ID:             sb.ID,
		Runtime:        sb.Runtime,
		Namespace:      sb.Namespace,
		Name:           sb.Name(),
		Key:            sb.Key(),
		CgroupOnly:     sb.CgroupOnly,
		Supervisor:     sb.SupervisorNote,
		Cgroup:         sb.Cgroup,
		Freezer:        sb.Freezer,
		Frozen:         sb.Frozen,
		Paused:         sb.PausedNote,
		Badges:         append([]Badge{}, sb.Badges...),
		Cleanup:        append([]string{}, sb.Cleanup...),
		CleanupRefused: sb.CleanupRefused,
		Conflicts:      sb.Conflicts,
		Reconcile:      append([]string{}, sb.Reconcile...),
		Processes:      slices.Grow(procs, len(sb.Members)),
	}
	if s.Processes == nil {
		s.Processes = []ProcessJSON{} // a leftover's: [], not null
	}
	if sb.Root != nil {
		s.RootPID = sb.Root.PID
	}
	if sb.Supervisor != nil {
		s.SupervisorPID = sb.Supervisor.PID
	}
	for _, c := range sb.Containers() {
		cj := ContainerJSON{ID: c.ID, Cgroup: c.Cgroup, PIDs: make([]int, len(c.Members))}
		for i, m := range c.Members {
			cj.PIDs[i] = m.PID
		}
		s.Containers = append(s.Containers, cj)
	}
	for _, l := range sb.Leftovers {
		s.Leftovers = append(s.Leftovers, l.JSON(v.Time))
	}
	for _, m := range sb.Members {
		pj := v.processJSON(m.Process)
		pj.Escaped, pj.Orphan = m.Escaped, m.Escaped
		s.Processes = append(s.Processes, pj)
	}
	if r := v.Resources(sb); r != nil {
		s.Resources = resourcesJSON(r)
	}
	for _, n := range v.Network(sb) {
		nj := NetworkJSON{NetnsInode: n.Ino, NetnsName: n.Name, Host: n.Host, Error: n.Err}
		if !n.Host {
			nj.Listeners = make([]ListenerJSON, 0, len(n.Listeners))
		}
		for _, l := range n.Listeners {
			nj.Listeners = append(nj.Listeners, ListenerJSON{Proto: l.Proto, Address: l.Addr, Inode: l.Inode})
		}
		s.Network = append(s.Network, nj)
	}
	if t := sb.Trouble; t != nil {
		s.Trouble = &TroubleJSON{Hollow: t.Hollow}
		for _, e := range t.OOM {
			s.Trouble.OOM = append(s.Trouble.OOM, OOMJSON{Source: e.Source, Time: e.Time.UTC().Truncate(time.Second), Kills: e.Kills, PID: e.PID, Comm: e.Comm, Host: e.Host, VMM: e.VMM, Detail: e.Detail})
		}
		for _, e := range t.Stuck {
			s.Trouble.Stuck = append(s.Trouble.Stuck, StuckJSON{PID: e.PID, Comm: e.Comm, Wchan: e.Wchan, StuckSeconds: v.Time.Sub(e.Since).Truncate(time.Second).Seconds()})
		}
	}
	return s
}

func resourcesJSON(r *Resources) *ResourcesJSON {
	return &ResourcesJSON{
		CPUSeconds: r.CPUSeconds, MemoryBytes: r.MemoryBytes, MemoryPeakBytes: r.MemoryPeakBytes,
		MemoryLimitBytes: r.MemoryLimitBytes, CPULimitCores: r.CPULimitCores,
		PIDs: r.PIDs, PIDsLimit: r.PIDsLimit, IOReadBytes: r.IOReadBytes, IOWriteBytes: r.IOWriteBytes,
		OOMKills: r.OOMKills, Pressure: PressureJSON{CPU: r.Pressure.CPU, Memory: r.Pressure.Memory, IO: r.Pressure.IO},
		Source: r.Source, Overhead: PartJSON(r.Overhead), Workload: PartJSON(r.Workload), WorkloadIs: r.WorkloadNote,
	}
}

func (v *View) processJSON(p *proc.Process) ProcessJSON {
	argv := p.Argv
	if argv == nil {
		argv = []string{}
	}
	return ProcessJSON{
		PID: p.PID, PPID: p.PPID, PGID: p.PGID, SID: p.SID, UID: p.UID,
		State:            string(p.State),
		Comm:             p.Comm,
		Argv:             argv,
		ArgsTruncated:    p.ArgvCut,
		StartTime:        v.Snapshot.StartTime(p).UTC().Truncate(time.Second),
		StartTicks:       p.Start,
		CPUSeconds:       v.Snapshot.CPUSeconds(p),
		RSSBytes:         p.RSS,
		Threads:          p.Threads,
		Zombie:           p.Zombie(),
		PartlyUnreadable: p.Partial,
	}
}

// JSON is the leftover as a Document lists it, aged at now.
func (l Leftover) JSON(now time.Time) LeftoverJSON {
	return LeftoverJSON{
		Kind: string(l.Kind), Path: l.Path, Netns: l.Netns, Hierarchy: l.Hierarchy, MountNSPID: l.NSPID, HeldBy: l.Holders,
		AgeSeconds: l.Age(now).Truncate(time.Second).Seconds(), Why: l.Why, Keep: l.Keep,
	}
}
