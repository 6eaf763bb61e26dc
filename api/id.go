package api

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
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
// '1', the rest the base-58 digits of the number the bytes spell.
func cb58(b []byte) string {
	sum := sha256.Sum256(b)
	full := append(append(make([]byte, 0, len(b)+4), b...), sum[len(sum)-4:]...)
	zeros := 0
	for zeros < len(full) && full[zeros] == 0 {
		zeros++
	}
	n := new(big.Int).SetBytes(full)
	var digits []byte
	radix, mod := big.NewInt(58), new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, radix, mod)
		digits = append(digits, base58[mod.Int64()])
	}
	out := make([]byte, 0, zeros+len(digits))
	out = append(out, bytes.Repeat([]byte{'1'}, zeros)...)
	for i := len(digits) - 1; i >= 0; i-- {
		out = append(out, digits[i])
	}
	return string(out)
}

// fromCB58 reads s into dst, which it must fill exactly, checksum checked.
func fromCB58(s string, dst []byte) error {
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	n, radix := new(big.Int), big.NewInt(58)
	for i := zeros; i < len(s); i++ {
		d := strings.IndexByte(base58, s[i])
		if d < 0 {
			return fmt.Errorf("%w: %q has %q, not a base58 digit", ErrBadID, s, s[i])
		}
		n.Mul(n, radix).Add(n, big.NewInt(int64(d)))
	}
	var full []byte
	if n.Sign() > 0 {
		full = n.Bytes()
	}
	full = append(make([]byte, zeros), full...)
	if len(full) != len(dst)+4 {
		return fmt.Errorf("%w: %q holds %d bytes, want %d and a 4-byte checksum", ErrBadID, s, max(len(full)-4, 0), len(dst))
	}
	sum := sha256.Sum256(full[:len(dst)])
	if !bytes.Equal(sum[len(sum)-4:], full[len(dst):]) {
		return fmt.Errorf("%w: %q: bad checksum", ErrBadID, s)
	}
	copy(dst, full)
	return nil
}
