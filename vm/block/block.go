// Package block is the wire form of an S-Chain block: a header that fixes
// the parent, height, time, P-chain height and resulting state root, and the
// transactions in execution order.
//
// Encoding (version 1, big endian):
//
//	u16 version | [32] parent | u64 height | u64 timestamp (unix ms)
//	u8 hasPChainHeight | u64 pChainHeight | [32] state root
//	u32 txs | { u32 length | tx bytes }...
//
// Like transactions, a block has exactly one encoding: Parse accepts only
// bytes that encoding the result reproduces.
package block

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/internal/wire"
	"github.com/s-chain/schain/txs"
)

// Version is the only block encoding this code reads and writes.
const Version uint16 = 1

var (
	ErrTooLarge                   = errors.New("block: exceeds the size limit")
	ErrTooManyTxs                 = errors.New("block: too many transactions")
	ErrUnknownVersion             = errors.New("block: unknown encoding version")
	ErrNoPChainHeightWithTxs      = errors.New("block: a block without a P-chain height carries no transactions")
	ErrPChainHeightWithoutContext = errors.New("block: a block without a P-chain context has P-chain height 0")
	ErrTrailingBytes              = errors.New("block: trailing bytes")
)

// Overhead is the size of a block's encoding without its transactions, and
// TxOverhead the framing each transaction adds: a builder sizes a block
// from these before encoding it.
const (
	Overhead   = 2 + 32 + 8 + 8 + 1 + 8 + 32 + 4
	TxOverhead = 4
)

// Size is the encoded size of a block carrying transactions of these sizes
// in bytes.
func Size(txBytes ...int) int {
	n := Overhead
	for _, b := range txBytes {
		n += TxOverhead + b
	}
	return n
}

// Limits bound a block; they are chain parameters like txs.Limits.
type Limits struct {
	MaxBlockBytes int `json:"maxBlockBytes"`
	MaxTxs        int `json:"maxTxs"`
}

// DefaultLimits fit a few maximal transactions per block.
func DefaultLimits() Limits { return Limits{MaxBlockBytes: 2 << 20, MaxTxs: 1024} }

// Block is a parsed or built block with its bytes and ID cached.
type Block struct {
	Parent    ids.ID
	Height    uint64
	Timestamp uint64 // unix milliseconds
	// HasPChainHeight is false for blocks built without a P-chain context (the
	// first block after genesis); they carry no owner-signed transactions.
	HasPChainHeight bool
	PChainHeight    uint64
	StateRoot       ids.ID
	Txs             []*txs.Tx

	bytes []byte
	id    ids.ID
}

// New encodes a block.
func New(parent ids.ID, height, timestamp uint64, hasPChainHeight bool, pChainHeight uint64, root ids.ID, blockTxs []*txs.Tx, l Limits) (*Block, error) {
	b := &Block{Parent: parent, Height: height, Timestamp: timestamp, HasPChainHeight: hasPChainHeight, PChainHeight: pChainHeight, StateRoot: root, Txs: blockTxs}
	if err := b.verifyShape(l); err != nil {
		return nil, err
	}
	w := &wire.Writer{B: make([]byte, 0, 128)}
	w.U16(Version)
	w.Raw(parent[:])
	w.U64(height)
	w.U64(timestamp)
	w.Bool(hasPChainHeight)
	w.U64(pChainHeight)
	w.Raw(root[:])
	w.U32(uint32(len(blockTxs)))
	for _, tx := range blockTxs {
		w.U32(uint32(len(tx.Bytes())))
		w.Raw(tx.Bytes())
	}
	if len(w.B) > l.MaxBlockBytes {
		return nil, fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(w.B), l.MaxBlockBytes)
	}
	b.bytes, b.id = w.B, sha256.Sum256(w.B)
	return b, nil
}

// Parse decodes a block and its transactions (statelessly verified).
func Parse(b []byte, l Limits, tl txs.Limits) (*Block, error) {
	if len(b) > l.MaxBlockBytes {
		return nil, fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(b), l.MaxBlockBytes)
	}
	r := &wire.Reader{B: b}
	if v := r.U16(); r.Err == nil && v != Version {
		return nil, fmt.Errorf("%w: %d", ErrUnknownVersion, v)
	}
	blk := &Block{}
	r.Fixed(blk.Parent[:])
	blk.Height = r.U64()
	blk.Timestamp = r.U64()
	blk.HasPChainHeight = r.Bool()
	blk.PChainHeight = r.U64()
	r.Fixed(blk.StateRoot[:])
	n := r.U32()
	if r.Err != nil {
		return nil, r.Err
	}
	if n > uint32(l.MaxTxs) {
		return nil, fmt.Errorf("%w: %d > %d", ErrTooManyTxs, n, l.MaxTxs)
	}
	for i := uint32(0); i < n; i++ {
		txb := r.Take(int(r.U32()))
		if r.Err != nil {
			return nil, r.Err
		}
		tx, err := txs.Parse(txb, tl)
		if err != nil {
			return nil, fmt.Errorf("tx %d: %w", i, err)
		}
		blk.Txs = append(blk.Txs, tx)
	}
	if err := r.Done(); err != nil {
		if errors.Is(err, wire.ErrTrailing) {
			return nil, ErrTrailingBytes
		}
		return nil, err
	}
	if err := blk.verifyShape(l); err != nil {
		return nil, err
	}
	blk.bytes = append([]byte(nil), b...)
	blk.id = sha256.Sum256(blk.bytes)
	return blk, nil
}

func (b *Block) verifyShape(l Limits) error {
	switch {
	case len(b.Txs) > l.MaxTxs:
		return fmt.Errorf("%w: %d > %d", ErrTooManyTxs, len(b.Txs), l.MaxTxs)
	case !b.HasPChainHeight && len(b.Txs) > 0:
		return ErrNoPChainHeightWithTxs
	case !b.HasPChainHeight && b.PChainHeight != 0:
		return ErrPChainHeightWithoutContext
	}
	return nil
}

// ID is SHA-256 of the encoding.
func (b *Block) ID() ids.ID { return b.id }

// Bytes is the canonical encoding; callers must not modify it.
func (b *Block) Bytes() []byte { return b.bytes }
