package proc

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// OOMKill is one kill by the kernel's OOM killer, as its log line says:
//
//	oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/box,task_memcg=/box,task=stress,pid=4242,uid=0
//
// (mm/oom_kill.c, dump_oom_victim; Linux 4.19 and later).
type OOMKill struct {
	Time time.Time
	PID  int
	// Comm is the victim's comm, escaped by the kernel (\xNN) as the log
	// escapes every unprintable byte.
	Comm string
	// Constraint is CONSTRAINT_MEMCG for a cgroup's limit, CONSTRAINT_NONE
	// for the whole host out of memory (also CPUSET, MEMORY_POLICY).
	Constraint string
	// TaskMemcg is the victim's memory cgroup; OOMMemcg the cgroup whose
	// limit was hit (the root for a host-wide OOM).
	TaskMemcg, OOMMemcg string
}

// Host reports whether the host as a whole ran out of memory, rather
// than a cgroup hitting its limit.
func (k OOMKill) Host() bool { return k.Constraint != "CONSTRAINT_MEMCG" }

// kmsgReader follows /dev/kmsg, each read one record (Documentation/ABI/
// testing/dev-kmsg), keeping the OOM kills it has seen.
type kmsgReader struct {
	// mu is held while the log is read, by kills or by a read ahead.
	mu     sync.Mutex
	path   string
	fd     int // -1 before the first open; -2 when it cannot be read
	buf    []byte
	killed []OOMKill
}

// newKmsgReader follows the log at path; "" reads none.
func newKmsgReader(path string) *kmsgReader {
	if path == "" {
		return &kmsgReader{fd: -2}
	}
	return &kmsgReader{path: path, fd: -1}
}

// kills reads the records written since the last call and returns the
// kills after since, oldest first (the slice is the reader's: read-only).
func (k *kmsgReader) kills(boot, since time.Time) []OOMKill {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.drain(boot)
	i := 0
	for i < len(k.killed) && k.killed[i].Time.Before(since) {
		i++
	}
	k.killed = k.killed[i:]
	return k.killed
}

// readAhead reads the records there are now on a goroutine of its own;
// the next kills waits for it and reads only what came after.
func (k *kmsgReader) readAhead(boot time.Time) {
	k.mu.Lock()
	go func() {
		defer k.mu.Unlock()
		k.drain(boot)
	}()
}

// drain reads every record written since the last drain, keeping the
// kills. k.mu must be held.
func (k *kmsgReader) drain(boot time.Time) {
	if k.fd == -1 {
		fd, err := unix.Open(k.path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			k.fd = -2
			return
		}
		k.fd, k.buf = fd, make([]byte, 8192)
	}
	if k.fd < 0 {
		return
	}
	for {
		n, err := unix.Read(k.fd, k.buf)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EPIPE) {
			// EPIPE: records were overwritten before we read them; the
			// next read goes on from the oldest one left.
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		if kill, ok := parseKmsgOOM(k.buf[:n], boot); ok {
			k.killed = append(k.killed, kill)
		}
	}
}

func (k *kmsgReader) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fd >= 0 {
		unix.Close(k.fd)
	}
	k.fd = -1
}

// parseKmsgOOM parses one /dev/kmsg record, "prio,seq,usec,flags;text",
// and reports whether its text is an oom-kill line. The victim's comm is
// the task's own (hostile) choice, up to 15 bytes, and cgroup names may be
// too: the fields are cut from the right, where the kernel's own
// ",pid=N,uid=N" end the line, and the comm is the longest tail after a
// ",task=" that fits TASK_COMM_LEN, escaped.
func parseKmsgOOM(rec []byte, boot time.Time) (OOMKill, bool) {
	head, text, ok := bytes.Cut(rec, []byte(";"))
	if !ok {
		return OOMKill{}, false
	}
	text, _, _ = bytes.Cut(text, []byte("\n"))
	line, ok := bytes.CutPrefix(text, []byte("oom-kill:"))
	if !ok {
		return OOMKill{}, false
	}
	fields := strings.SplitN(string(head), ",", 4)
	if len(fields) < 3 {
		return OOMKill{}, false
	}
	usec, err := strconv.ParseUint(fields[2], 10, 64)
	if err != nil {
		return OOMKill{}, false
	}
	s := string(line)
	i := strings.LastIndex(s, ",uid=")
	if i < 0 {
		return OOMKill{}, false
	}
	s = s[:i]
	i = strings.LastIndex(s, ",pid=")
	if i < 0 {
		return OOMKill{}, false
	}
	pid, err := strconv.Atoi(s[i+len(",pid="):])
	if err != nil || pid <= 0 {
		return OOMKill{}, false
	}
	s = s[:i]
	// The comm: the last ",task=" that leaves at most 15 bytes of comm
	// (the kernel escapes unprintable bytes, so allow for that).
	t := -1
	for j := len(s) - 1; j >= 0 && len(s)-j <= len(",task=")+4*15; j-- {
		if strings.HasPrefix(s[j:], ",task=") {
			t = j
		}
	}
	if t < 0 {
		return OOMKill{}, false
	}
	kill := OOMKill{Time: boot.Add(time.Duration(usec) * time.Microsecond), PID: pid, Comm: s[t+len(",task="):]}
	s = s[:t]
	constraint, rest, _ := strings.Cut(s, ",")
	kill.Constraint = strings.TrimPrefix(constraint, "constraint=")
	if i := strings.LastIndex(rest, ",task_memcg="); i >= 0 {
		kill.TaskMemcg = rest[i+len(",task_memcg="):]
		rest = rest[:i]
	}
	if i := strings.Index(rest, "oom_memcg="); i >= 0 {
		kill.OOMMemcg = rest[i+len("oom_memcg="):]
	}
	return kill, true
}
