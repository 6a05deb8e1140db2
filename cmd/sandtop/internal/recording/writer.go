package recording

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sandtop/sandtop/proc"
)

// ErrMaxSize is returned by Write when the next frame would take the file
// past its size limit. The frame is not written; Close still fits.
var ErrMaxSize = errors.New("reached the size limit")

// endReserve is kept free under the size limit for the end frame.
const endReserve = 256

// Writer appends snapshots to a recording. Each frame goes out in a single
// Write, so a recorder killed at any moment leaves every frame before the
// one it was writing intact. Its methods may be called from several
// goroutines.
type Writer struct {
	mu       sync.Mutex
	w        io.Writer
	zenc     *zstd.Encoder
	enc      encoder
	keyEvery time.Duration
	maxSize  int64
	lastKey  time.Time
	frames   int
	size     int64
	buf, z   []byte
	full     bool
	err      error
}

// NewWriter writes the preamble and the header to w, which should be
// empty. maxSize bounds the file (0: no bound).
func NewWriter(w io.Writer, h *Header, maxSize int64) (*Writer, error) {
	zenc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	rw := &Writer{w: w, zenc: zenc, keyEvery: h.KeyEvery, maxSize: maxSize}
	rw.buf = appendPreamble(rw.buf[:0])
	rw.buf = appendFrame(rw.buf, kindHeader, h.Started, zenc.EncodeAll(hdr, nil))
	if err := rw.emit(); err != nil {
		return nil, err
	}
	return rw, nil
}

// Write appends snap: a key frame when one is due, else a delta against
// the snapshot written before. Snapshots must come in time order from one
// scanner, as a refresh loop makes them.
func (w *Writer) Write(snap *proc.Snapshot) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	key := w.frames == 0 || w.keyEvery <= 0 || snap.Time.Sub(w.lastKey) >= w.keyEvery
	kind := byte(kindDelta)
	if key {
		kind = kindKey
	}
	if w.full {
		return ErrMaxSize
	}
	w.z = w.zenc.EncodeAll(w.enc.encode(snap, key), w.z[:0])
	w.buf = appendFrame(w.buf[:0], kind, snap.Time, w.z)
	if w.maxSize > 0 && w.size+int64(len(w.buf))+endReserve > w.maxSize {
		// The encoder already counts this frame as written: nothing may
		// follow it but the end frame.
		w.full = true
		return ErrMaxSize
	}
	if err := w.emit(); err != nil {
		return err
	}
	if key {
		w.lastKey = snap.Time
	}
	w.frames++
	return nil
}

// emit writes w.buf; a failed write stops the recording, since a partial
// frame may be on disk and nothing after it could be read.
func (w *Writer) emit() error {
	n, err := w.w.Write(w.buf)
	w.size += int64(n)
	if err != nil {
		w.err = fmt.Errorf("write recording: %w", err)
	}
	return w.err
}

// End is the end frame's content.
type End struct {
	Frames  int    `json:"frames"`
	Stopped string `json:"stopped"`
}

// Close writes the end frame, saying why recording stopped. It does not
// close the underlying writer.
func (w *Writer) Close(stopped string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	b, err := json.Marshal(End{Frames: w.frames, Stopped: stopped})
	if err != nil {
		return err
	}
	w.buf = appendFrame(w.buf[:0], kindEnd, time.Now(), w.zenc.EncodeAll(b, nil))
	if err := w.emit(); err != nil {
		return err
	}
	w.err = errors.New("recording closed")
	return nil
}

// Frames is the number of snapshots written; Size the bytes.
func (w *Writer) Frames() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.frames
}

// Size is the bytes written so far.
func (w *Writer) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
}
