package recording

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// FormatVersion is the version this package writes; it reads every
// version from 1 (which has no watch trailer) to this one.
const FormatVersion = 2

// magic opens every recording.
const magic = "SANDTREC"

// Frame kinds (doc.go).
const (
	kindHeader = 'H'
	kindKey    = 'K'
	kindDelta  = 'D'
	kindEnd    = 'E'
)

const (
	preambleSize = len(magic) + 4
	// envelope is the bytes around a payload: length, kind, time, crc.
	envelopeHead = 4 + 1 + 8
	envelopeSize = envelopeHead + 4
	// maxPayload bounds one frame: a length beyond it is damage, not a
	// snapshot (10,000 processes take well under a megabyte).
	maxPayload = 256 << 20
	// maxRaw bounds a payload once decompressed.
	maxRaw = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends one frame around payload.
func appendFrame(dst []byte, kind byte, at time.Time, payload []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = append(dst, kind)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(at.UnixNano()))
	dst = append(dst, payload...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

func appendPreamble(dst []byte) []byte {
	dst = append(dst, magic...)
	return binary.LittleEndian.AppendUint32(dst, FormatVersion)
}

// errCut is a frame the file ends inside of: a recorder that was killed,
// or a copy of a file still being written.
var errCut = errors.New("the file ends inside this frame")

// frameHead is a frame's envelope before its payload.
type frameHead struct {
	length uint32
	kind   byte
	time   time.Time
}

func parseHead(b []byte) (frameHead, error) {
	h := frameHead{
		length: binary.LittleEndian.Uint32(b),
		kind:   b[4],
		time:   time.Unix(0, int64(binary.LittleEndian.Uint64(b[5:]))),
	}
	switch h.kind {
	case kindHeader, kindKey, kindDelta, kindEnd:
	default:
		return h, fmt.Errorf("unknown frame kind %q", h.kind)
	}
	if h.length > maxPayload {
		return h, fmt.Errorf("frame length %d is beyond %d", h.length, maxPayload)
	}
	return h, nil
}

func kindName(k byte) string {
	switch k {
	case kindHeader:
		return "header"
	case kindKey:
		return "key"
	case kindDelta:
		return "delta"
	case kindEnd:
		return "end"
	}
	return fmt.Sprintf("%q", k)
}
