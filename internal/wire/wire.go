// Package wire holds the fixed-width, big-endian primitives that S-Chain's
// canonical encodings (transactions, receipts, state records) are built from.
// Every value has exactly one encoding: integers are fixed width, strings and
// lists carry explicit lengths, booleans are the bytes 0 and 1.
package wire

import (
	"encoding/binary"
	"math"

	"github.com/s-chain/schain/errcode"
)

var (
	// ErrTruncated means the input ended before the value did.
	ErrTruncated = errcode.New(errcode.InvalidParams, "truncated", "wire: input ends early")
	// ErrBadBool means a boolean byte was neither 0 nor 1.
	ErrBadBool = errcode.New(errcode.InvalidParams, "bad_bool", "wire: boolean byte is neither 0 nor 1")
	// ErrStringTooLong means a string does not fit its u16 length prefix.
	ErrStringTooLong = errcode.New(errcode.InvalidParams, "string_too_long", "wire: string longer than 65535 bytes")
)

// Writer appends values to a byte slice. Strings longer than a u16 length
// are a programming error the callers' limits rule out; Writer records it in
// Err instead of truncating.
type Writer struct {
	B   []byte
	Err error
}

func (w *Writer) U8(v byte)    { w.B = append(w.B, v) }
func (w *Writer) U16(v uint16) { w.B = binary.BigEndian.AppendUint16(w.B, v) }
func (w *Writer) U32(v uint32) { w.B = binary.BigEndian.AppendUint32(w.B, v) }
func (w *Writer) U64(v uint64) { w.B = binary.BigEndian.AppendUint64(w.B, v) }
func (w *Writer) Raw(v []byte) { w.B = append(w.B, v...) }
func (w *Writer) Bool(v bool) {
	if v {
		w.U8(1)
	} else {
		w.U8(0)
	}
}

// Str writes a u16 length and the bytes of s.
func (w *Writer) Str(s string) {
	if len(s) > math.MaxUint16 {
		if w.Err == nil {
			w.Err = ErrStringTooLong
		}
		return
	}
	w.U16(uint16(len(s)))
	w.B = append(w.B, s...)
}

// Reader consumes values from a byte slice. The first error sticks: later
// reads return zero values, so a decoder can read a whole record and check
// Err once.
type Reader struct {
	B   []byte
	Off int
	Err error
}

// Take returns the next n bytes (aliasing the input).
func (r *Reader) Take(n int) []byte {
	if r.Err != nil {
		return nil
	}
	if n < 0 || n > len(r.B)-r.Off {
		r.Err = ErrTruncated
		return nil
	}
	v := r.B[r.Off : r.Off+n]
	r.Off += n
	return v
}

func (r *Reader) U8() byte {
	if v := r.Take(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *Reader) U16() uint16 {
	if v := r.Take(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (r *Reader) U32() uint32 {
	if v := r.Take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (r *Reader) U64() uint64 {
	if v := r.Take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// Fixed copies the next len(dst) bytes into dst.
func (r *Reader) Fixed(dst []byte) { copy(dst, r.Take(len(dst))) }

// Str reads a u16 length and that many bytes.
func (r *Reader) Str() string { return string(r.Take(int(r.U16()))) }

func (r *Reader) Bool() bool {
	switch r.U8() {
	case 0:
		return false
	case 1:
		return true
	default:
		if r.Err == nil {
			r.Err = ErrBadBool
		}
		return false
	}
}

// Done reports the sticky error, or ErrTrailing-style failure when bytes are
// left over: a canonical record is consumed exactly.
func (r *Reader) Done() error {
	if r.Err != nil {
		return r.Err
	}
	if r.Off != len(r.B) {
		return ErrTrailing
	}
	return nil
}

// ErrTrailing means bytes were left after a complete record.
var ErrTrailing = errcode.New(errcode.InvalidParams, "trailing_record_bytes", "wire: trailing bytes after the record")
