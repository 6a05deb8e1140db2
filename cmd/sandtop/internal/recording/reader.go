package recording

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sandtop/sandtop/proc"
)

// Frame is one snapshot's place in a recording.
type Frame struct {
	// Offset is where the frame starts in the file; Size is its length
	// with the envelope.
	Offset int64
	Size   int64
	Key    bool
	Time   time.Time
}

// Reader reads a recording. Opening it reads every frame's envelope and
// checks its CRC, so the index of readable frames is known at once; a
// frame's payload is decoded when it is asked for. Its methods may be
// called from several goroutines.
type Reader struct {
	Header Header

	ra   io.ReaderAt
	file *os.File
	zdec *zstd.Decoder

	mu     sync.Mutex
	frames []Frame
	keys   []int // indexes of key frames in frames
	end    *End
	damage error
	dec    decoder
	at     int // the frame dec.snap is, -1 for none
	buf    []byte
	raw    []byte
}

// decoderZstd is one zstd decoder for every Reader: DecodeAll may be
// called from several goroutines, and making a decoder costs more than
// reading a small recording.
var decoderZstd = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(2), zstd.WithDecoderMaxMemory(maxRaw))
})

// Open opens the recording at path.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open recording: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open recording: %w", err)
	}
	r, err := NewReader(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.file = f
	return r, nil
}

// Close releases the file.
func (r *Reader) Close() error {
	if r.file != nil {
		return r.file.Close()
	}
	return nil
}

// NewReader reads the recording in the first size bytes of ra. Only a
// file that is not a recording, or whose header is unreadable, is an
// error; damage after the header stops the index at the last good frame
// and is reported by Damage.
func NewReader(ra io.ReaderAt, size int64) (*Reader, error) {
	zdec, err := decoderZstd()
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	r := &Reader{ra: ra, zdec: zdec, at: -1}
	br := bufio.NewReaderSize(io.NewSectionReader(ra, 0, size), int(min(max(size, 16), 1<<20)))
	pre := make([]byte, preambleSize)
	if _, err := io.ReadFull(br, pre); err != nil || string(pre[:len(magic)]) != magic {
		return nil, errors.New("not a sandtop recording")
	}
	r.Header.FormatVersion = binary.LittleEndian.Uint32(pre[len(magic):])
	if r.Header.FormatVersion < 1 || r.Header.FormatVersion > FormatVersion {
		return nil, fmt.Errorf("recording format version %d: this sandtop reads versions 1 to %d", r.Header.FormatVersion, FormatVersion)
	}
	s := scan{r: r, br: br, off: int64(preambleSize), size: size}
	kind, at, payload, err := s.next()
	if err == nil && kind != kindHeader {
		err = fmt.Errorf("first frame is a %s frame, not the header", kindName(kind))
	}
	if err == nil {
		err = r.json(payload, &r.Header)
	}
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if r.Header.Started.IsZero() {
		r.Header.Started = at
	}
	r.dec.hdr = &r.Header
	for {
		start := s.off
		kind, at, payload, err := s.next()
		if errors.Is(err, io.EOF) {
			if r.end == nil {
				r.damage = fmt.Errorf("not closed: it ends after frame %d, where the recorder stopped without finishing (killed, or still recording)", len(r.frames))
			}
			break
		}
		if err == nil {
			switch {
			case kind == kindHeader:
				err = errors.New("a second header")
			case r.end != nil:
				err = errors.New("a frame after the end frame")
			case kind == kindEnd:
				var e End
				if err = r.json(payload, &e); err == nil {
					r.end = &e
				}
			case kind == kindDelta && len(r.frames) == 0:
				err = errors.New("a delta before any key frame")
			case len(r.frames) > 0 && at.Before(r.frames[len(r.frames)-1].Time):
				err = fmt.Errorf("time %s goes back", at.Format(time.RFC3339Nano))
			}
		}
		if err != nil {
			r.damage = fmt.Errorf("frame %d at byte %d: %w", len(r.frames)+1, start, err)
			break
		}
		if kind == kindKey {
			r.keys = append(r.keys, len(r.frames))
		}
		if kind == kindKey || kind == kindDelta {
			r.frames = append(r.frames, Frame{Offset: start, Size: s.off - start, Key: kind == kindKey, Time: at})
		}
	}
	return r, nil
}

func (r *Reader) json(payload []byte, v any) error {
	raw, err := r.zdec.DecodeAll(payload, nil)
	if err != nil {
		return fmt.Errorf("decompress: %w", err)
	}
	return json.Unmarshal(raw, v)
}

// scan walks the frames of a file in order, checking each CRC.
type scan struct {
	r    *Reader
	br   *bufio.Reader
	off  int64
	size int64
	buf  []byte
}

// next reads one frame; io.EOF when the file ends exactly before it.
func (s *scan) next() (kind byte, at time.Time, payload []byte, err error) {
	if s.off == s.size {
		return 0, time.Time{}, nil, io.EOF
	}
	if s.size-s.off < envelopeSize {
		return 0, time.Time{}, nil, fmt.Errorf("%w (%d bytes left, an envelope is %d)", errCut, s.size-s.off, envelopeSize)
	}
	s.buf = s.buf[:0]
	head := make([]byte, envelopeHead)
	if _, err := io.ReadFull(s.br, head); err != nil {
		return 0, time.Time{}, nil, fmt.Errorf("read: %w", err)
	}
	h, err := parseHead(head)
	if err != nil {
		return 0, time.Time{}, nil, err
	}
	total := int64(envelopeSize) + int64(h.length)
	if s.size-s.off < total {
		return 0, time.Time{}, nil, fmt.Errorf("%w (%d of %d bytes)", errCut, s.size-s.off, total)
	}
	s.buf = append(slices.Grow(s.buf[:0], int(total)), head...)[:total]
	if _, err := io.ReadFull(s.br, s.buf[envelopeHead:]); err != nil {
		return 0, time.Time{}, nil, fmt.Errorf("read: %w", err)
	}
	body := s.buf[:len(s.buf)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(s.buf[len(s.buf)-4:]) {
		return 0, time.Time{}, nil, errors.New("checksum mismatch: the frame is damaged")
	}
	s.off += total
	return h.kind, h.time, body[envelopeHead:], nil
}

// Frames returns the index of readable snapshots, oldest first. It only
// shrinks, when decoding a frame finds damage the CRC did not.
func (r *Reader) Frames() []Frame {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frames
}

// Len is the number of readable snapshots.
func (r *Reader) Len() int { return len(r.Frames()) }

// End is the end frame, nil when the recording was not closed.
func (r *Reader) End() *End {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.end
}

// Damage says why the recording is read only up to its last good frame:
// nil when it was closed cleanly and every frame read so far is good.
func (r *Reader) Damage() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.damage
}

// Snapshot decodes frame i: from the key frame before it, or on from the
// frame decoded last when that is on the way.
func (r *Reader) Snapshot(i int) (*proc.Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i < 0 || i >= len(r.frames) {
		return nil, fmt.Errorf("frame %d: the recording has %d", i+1, len(r.frames))
	}
	k := r.keys[sort.SearchInts(r.keys, i+1)-1]
	from := k
	if r.at >= k && r.at <= i {
		from = r.at + 1
	}
	for j := from; j <= i; j++ {
		if err := r.decode(j); err != nil {
			r.damage = fmt.Errorf("frame %d at byte %d: %w", j+1, r.frames[j].Offset, err)
			r.frames = r.frames[:j]
			r.keys = r.keys[:sort.SearchInts(r.keys, j)]
			r.at = -1
			r.dec.snap = nil
			return nil, r.damage
		}
		r.at = j
	}
	return r.dec.snap, nil
}

func (r *Reader) decode(j int) error {
	f := r.frames[j]
	if cap(r.buf) < int(f.Size) {
		r.buf = make([]byte, f.Size)
	}
	b := r.buf[:f.Size]
	if _, err := r.ra.ReadAt(b, f.Offset); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if crc32.Checksum(b[:len(b)-4], castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return errors.New("checksum mismatch: the file changed since it was opened")
	}
	h, err := parseHead(b)
	if err != nil {
		return err
	}
	raw, err := r.zdec.DecodeAll(b[envelopeHead:len(b)-4], r.raw[:0])
	if err != nil {
		return fmt.Errorf("decompress: %w", err)
	}
	r.raw = raw
	_, err = r.dec.apply(h.kind, raw, f.Time)
	return err
}

// Verify decodes every frame in order, so that Frames and Damage account
// for damage inside payloads too.
func (r *Reader) Verify() error {
	for i := 0; i < r.Len(); i++ {
		if _, err := r.Snapshot(i); err != nil {
			return err
		}
	}
	return r.Damage()
}

// Range is the time of the first and of the last readable snapshot.
func (r *Reader) Range() (first, last time.Time, ok bool) {
	fs := r.Frames()
	if len(fs) == 0 {
		return time.Time{}, time.Time{}, false
	}
	return fs[0].Time, fs[len(fs)-1].Time, true
}

// At returns the frame that shows the host as of t: the last one recorded
// at or before t. A time outside the recording is an error naming its range.
func (r *Reader) At(t time.Time) (int, error) {
	fs := r.Frames()
	first, last, ok := r.Range()
	if !ok {
		return 0, errors.New("the recording holds no readable snapshot")
	}
	if t.Before(first) || t.After(last) {
		return 0, &OutOfRangeError{At: t, First: first, Last: last}
	}
	return sort.Search(len(fs), func(i int) bool { return fs[i].Time.After(t) }) - 1, nil
}

// OutOfRangeError is a time before the first snapshot or after the last.
type OutOfRangeError struct{ At, First, Last time.Time }

func (e *OutOfRangeError) Error() string {
	return fmt.Sprintf("%s is outside the recording, which runs from %s to %s",
		stamp(e.At), stamp(e.First), stamp(e.Last))
}

func stamp(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05.000 MST") }
