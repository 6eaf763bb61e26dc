package certificate

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/set"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/internal/wire"
)

// Version is the only certificate encoding this code reads and writes.
const Version uint16 = 1

// MaxSignersBytes bounds the signer bitset: one bit per validator of the
// canonical set, far more validators than a subnet has.
const MaxSignersBytes = 1 << 12

var (
	ErrUnknownVersion = errcode.New(errcode.InvalidParams, "certificate_version", "certificate: unknown encoding version")
	ErrSignersTooLong = errcode.New(errcode.InvalidParams, "signers_too_long", "certificate: signer bitset exceeds its bound")
	ErrMalformed      = errcode.New(errcode.InvalidParams, "malformed_certificate", "certificate: malformed")
)

// Certificate is a statement with the aggregate BLS signature of
// validators holding more than 2/3 of the stake at its P-chain height.
// Signers is a bitset (big endian, no leading zero bytes: avalanchego's
// set.Bits) over the canonical validator set at that height.
type Certificate struct {
	Statement
	Signers   []byte
	Signature [bls.SignatureLen]byte
}

// Signed reports whether the validator at index i of the canonical set
// signed.
func (c *Certificate) Signed(i int) bool { return set.BitsFromBytes(c.Signers).Contains(i) }

// Bytes is the certificate's canonical encoding (version 1, big endian):
//
//	u16 version | u32 network ID | [32] chain ID | u64 height | [32] block ID
//	[32] state root | u64 P-chain height | u16 n | [n] signers | [96] signature
func (c *Certificate) Bytes() []byte {
	w := wire.Writer{B: make([]byte, 0, 2+4+32+8+32+32+8+2+len(c.Signers)+bls.SignatureLen)}
	w.U16(Version)
	w.U32(c.NetworkID)
	w.Raw(c.ChainID[:])
	w.U64(c.Height)
	w.Raw(c.BlockID[:])
	w.Raw(c.StateRoot[:])
	w.U64(c.PChainHeight)
	w.U16(uint16(len(c.Signers)))
	w.Raw(c.Signers)
	w.Raw(c.Signature[:])
	return w.B
}

// Parse reads a certificate, accepting only what Bytes produces.
func Parse(b []byte) (*Certificate, error) {
	r := wire.Reader{B: b}
	if v := r.U16(); r.Err == nil && v != Version {
		return nil, fmt.Errorf("%w: %d", ErrUnknownVersion, v)
	}
	c := &Certificate{}
	c.NetworkID = r.U32()
	r.Fixed(c.ChainID[:])
	c.Height = r.U64()
	r.Fixed(c.BlockID[:])
	r.Fixed(c.StateRoot[:])
	c.PChainHeight = r.U64()
	n := int(r.U16())
	if n > MaxSignersBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrSignersTooLong, n)
	}
	c.Signers = append([]byte(nil), r.Take(n)...)
	r.Fixed(c.Signature[:])
	if err := r.Done(); err != nil {
		return nil, errors.Join(ErrMalformed, err)
	}
	return c, nil
}

// API is the certificate as the API writes it.
func (c *Certificate) API() api.Certificate {
	return api.Certificate{
		NetworkID: c.NetworkID, ChainID: api.ID(c.ChainID), Height: c.Height, BlockID: api.ID(c.BlockID),
		StateRoot: api.ID(c.StateRoot), PChainHeight: c.PChainHeight,
		Signers:   "0x" + hex.EncodeToString(c.Signers),
		Signature: "0x" + hex.EncodeToString(c.Signature[:]),
	}
}

// FromAPI reads a certificate the API wrote, checking its bounds.
func FromAPI(a api.Certificate) (*Certificate, error) {
	signers, err := decodeHex(a.Signers)
	if err != nil {
		return nil, fmt.Errorf("%w: signers: %w", ErrMalformed, err)
	}
	if len(signers) > MaxSignersBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrSignersTooLong, len(signers))
	}
	sig, err := decodeHex(a.Signature)
	if err != nil || len(sig) != bls.SignatureLen {
		return nil, fmt.Errorf("%w: signature: want %d bytes of hex", ErrMalformed, bls.SignatureLen)
	}
	c := &Certificate{Statement: Statement{
		NetworkID: a.NetworkID, ChainID: ids.ID(a.ChainID), Height: a.Height, BlockID: ids.ID(a.BlockID),
		StateRoot: ids.ID(a.StateRoot), PChainHeight: a.PChainHeight,
	}, Signers: signers}
	copy(c.Signature[:], sig)
	return c, nil
}

// MarshalJSON writes the API form.
func (c Certificate) MarshalJSON() ([]byte, error) { return json.Marshal(c.API()) }

// UnmarshalJSON reads the API form.
func (c *Certificate) UnmarshalJSON(b []byte) error {
	var a api.Certificate
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	read, err := FromAPI(a)
	if err != nil {
		return err
	}
	*c = *read
	return nil
}

func decodeHex(s string) ([]byte, error) {
	return hex.DecodeString(strings.TrimPrefix(s, "0x"))
}

// Supermajority reports whether signed is more than 2/3 of total, exactly
// (in 128-bit integers: weights are uint64 and any sum of them fits).
func Supermajority(signed, total uint64) bool {
	// signed*3 > total*2
	sh, sl := bits.Mul64(signed, 3)
	th, tl := bits.Mul64(total, 2)
	return sh > th || (sh == th && sl > tl)
}

// Aggregate builds the certificate of s from the signatures of the
// validators at the given canonical indices. Each signature must already
// have been checked against its validator's key: one bad signature would
// spoil the aggregate.
func Aggregate(s Statement, sigs map[int]*bls.Signature) (*Certificate, error) {
	if len(sigs) == 0 {
		return nil, fmt.Errorf("%w: no signature", ErrMalformed)
	}
	signers := set.NewBits()
	list := make([]*bls.Signature, 0, len(sigs))
	for _, i := range slices.Sorted(maps.Keys(sigs)) {
		signers.Add(i)
		list = append(list, sigs[i])
	}
	agg, err := bls.AggregateSignatures(list)
	if err != nil {
		return nil, err
	}
	c := &Certificate{Statement: s, Signers: signers.Bytes()}
	copy(c.Signature[:], bls.SignatureToBytes(agg))
	return c, nil
}
