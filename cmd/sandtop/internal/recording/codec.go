package recording

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// enc appends the payload encodings of doc.go to a byte slice.
type enc struct{ b []byte }

func (e *enc) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) svarint(v int64)  { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) byte1(v byte)     { e.b = append(e.b, v) }
func (e *enc) int(v int)        { e.uvarint(uint64(max(v, 0))) }

// errShort is a payload that ends inside a value; errBad one whose value
// cannot be right. Both mean the frame is damaged.
var (
	errShort = errors.New("payload ends early")
	errBad   = errors.New("bad value")
)

// dec reads what enc wrote. The first error sticks: every later read
// returns zero, so a decoder checks err once, where it matters.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *dec) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) svarint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) byte1() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail(errShort)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// int reads a non-negative int that must fit in an int32 (pids, counts,
// thread numbers).
func (d *dec) int() int {
	v := d.uvarint()
	if v > 1<<31-1 {
		d.fail(fmt.Errorf("%w: %d out of range", errBad, v))
		return 0
	}
	return int(v)
}

// count reads a list length. Every element takes at least one byte, so a
// count beyond the bytes left is damage, and refusing it keeps a damaged
// frame from asking for a huge allocation.
func (d *dec) count() int {
	n := d.int()
	if n > len(d.b) {
		d.fail(fmt.Errorf("%w: %d elements in %d bytes", errBad, n, len(d.b)))
		return 0
	}
	return n
}

func (d *dec) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.fail(errShort)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
