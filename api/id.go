package api

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// ID is a 32-byte identifier on the wire (a transaction, block, chain,
// state root, content hash): the bytes of avalanchego's ids.ID, written as
// it writes them (CB58: base58 of the bytes and the last 4 bytes of their
// SHA-256). The two convert freely (ids.ID(x), api.ID(y)); this package
// stays within the standard library so that the SeaweedFS patch can copy it.
type ID [32]byte

// NodeID is a 20-byte node identifier on the wire: the bytes of
// avalanchego's ids.NodeID, written "NodeID-" and CB58 as it writes them.
type NodeID [20]byte

// NodeIDPrefix starts every written NodeID.
const NodeIDPrefix = "NodeID-"

// ErrBadID: a written ID or NodeID that is not CB58 of the right length
// with a valid checksum (and prefix).
var ErrBadID = errors.New("api: malformed ID")

// String is the CB58 form.
func (id ID) String() string { return cb58(id[:]) }

// MarshalText writes the CB58 form (JSON: a string).
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads the CB58 form.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// ParseID reads an ID's CB58 form.
func ParseID(s string) (ID, error) {
	var id ID
	return id, fromCB58(s, id[:])
}

// String is "NodeID-" and the CB58 form.
func (id NodeID) String() string { return NodeIDPrefix + cb58(id[:]) }

// MarshalText writes the String form (JSON: a string).
func (id NodeID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads the String form.
func (id *NodeID) UnmarshalText(b []byte) error {
	v, err := ParseNodeID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// ParseNodeID reads a NodeID's String form.
func ParseNodeID(s string) (NodeID, error) {
	var id NodeID
	rest, ok := strings.CutPrefix(s, NodeIDPrefix)
	if !ok {
		return id, fmt.Errorf("%w: node ID %q does not start with %q", ErrBadID, s, NodeIDPrefix)
	}
	return id, fromCB58(rest, id[:])
}

// base58 is Bitcoin's alphabet, the one CB58 uses.
const base58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// cb58 writes b and its checksum in base58: each leading zero byte is a
// '1', the rest the base-58 digits of the number the bytes spell. IDs are
// written in every reply, so the number is divided in 64-bit words by
// 58^10, ten digits a division, where a big.Int allocates per digit.
func cb58(b []byte) string {
	sum := sha256.Sum256(b)
	full := append(append(make([]byte, 0, len(b)+4), b...), sum[len(sum)-4:]...)
	zeros := 0
	for zeros < len(full) && full[zeros] == 0 {
		zeros++
	}
	words := toWords(full)
	// A byte is log(256)/log(58) < 1.37 digits; ten more for the last
	// division's leading zeros.
	digits := make([]byte, 0, len(full)*137/100+11)
	for start := 0; start < len(words); {
		var rem uint64
		for i := start; i < len(words); i++ {
			words[i], rem = bits.Div64(rem, words[i], pow58)
		}
		for range digitsPerWord {
			digits = append(digits, base58[rem%58])
			rem /= 58
		}
		for start < len(words) && words[start] == 0 {
			start++
		}
	}
	for len(digits) > 0 && digits[len(digits)-1] == '1' {
		digits = digits[:len(digits)-1]
	}
	out := make([]byte, zeros+len(digits))
	for i := range zeros {
		out[i] = '1'
	}
	for i, d := range digits {
		out[len(out)-1-i] = d
	}
	return string(out)
}

// pow58 is 58^digitsPerWord, the largest power of 58 below 2^64.
const (
	digitsPerWord        = 10
	pow58         uint64 = 430804206899405824
)

// toWords reads big-endian bytes as big-endian 64-bit words, the first
// padded with zeros on the left.
func toWords(b []byte) []uint64 {
	words := make([]uint64, (len(b)+7)/8)
	pad := len(words)*8 - len(b)
	for i, c := range b {
		at := pad + i
		words[at/8] |= uint64(c) << (8 * (7 - at%8))
	}
	return words
}

// fromCB58 reads s into dst, which it must fill exactly, checksum checked.
func fromCB58(s string, dst []byte) error {
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	// The number the digits spell, in words of the bytes it must fill (and
	// one more, whose non-zero bits mean too long a number): ten digits a
	// multiplication.
	want := len(dst) + 4
	words := make([]uint64, (want+7)/8+1)
	for i := zeros; i < len(s); {
		var chunk, scale uint64 = 0, 1
		for n := 0; n < digitsPerWord && i < len(s); n, i = n+1, i+1 {
			d := strings.IndexByte(base58, s[i])
			if d < 0 {
				return fmt.Errorf("%w: %q has %q, not a base58 digit", ErrBadID, s, s[i])
			}
			chunk, scale = chunk*58+uint64(d), scale*58
		}
		carry := chunk
		for j := len(words) - 1; j >= 0; j-- {
			hi, lo := bits.Mul64(words[j], scale)
			var c uint64
			words[j], c = bits.Add64(lo, carry, 0)
			carry = hi + c
		}
		if carry != 0 || words[0] != 0 {
			return fmt.Errorf("%w: %q holds more than %d bytes and a 4-byte checksum", ErrBadID, s, len(dst))
		}
	}
	// The words' bytes, the last want of them.
	all := make([]byte, 8*len(words))
	for j, w := range words {
		for k := range 8 {
			all[8*j+k] = byte(w >> (8 * (7 - k)))
		}
	}
	pad := len(all) - want
	for _, c := range all[:pad] {
		if c != 0 {
			return fmt.Errorf("%w: %q holds more than %d bytes and a 4-byte checksum", ErrBadID, s, len(dst))
		}
	}
	full := all[pad:]
	lead := 0
	for lead < want && full[lead] == 0 {
		lead++
	}
	if held := zeros + want - lead; held != want {
		return fmt.Errorf("%w: %q holds %d bytes, want %d and a 4-byte checksum", ErrBadID, s, max(held-4, 0), len(dst))
	}
	sum := sha256.Sum256(full[:len(dst)])
	if !bytes.Equal(sum[len(sum)-4:], full[len(dst):]) {
		return fmt.Errorf("%w: %q: bad checksum", ErrBadID, s)
	}
	copy(dst, full)
	return nil
}
