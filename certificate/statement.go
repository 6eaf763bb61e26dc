// Package certificate holds S-Chain's finality certificates: the statement
// validators sign about a block they accepted, the certificate that carries
// more than 2/3 of the stake's signatures on it, and Verify, which checks a
// certificate offline against the P-chain validator set it names, so a
// client trusts no single node.
//
// Snowman accepts a block after repeated sampled polls; no node holds
// evidence that a supermajority accepted it. A certificate is that
// evidence: the BLS signatures (the validators' P-chain keys, the warp
// signer every node already has) of validators holding more than 2/3 of
// the stake at the block's P-chain height, aggregated into one signature
// and a bitset over the canonical validator set (avalanchego's warp
// ordering: by public key, keyless validators only in the total weight).
//
// A certificate over height h covers every block below h: each block names
// its parent, so the certified block ID fixes the whole chain under it.
package certificate

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"

	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/internal/wire"
)

// Domain starts every statement's payload. It separates what validators
// sign for a certificate from everything else they sign with the same key:
// a transaction's owner signature covers a 32-byte hash, never a payload
// of this length or prefix.
const Domain = "schain/certificate/v1"

// PayloadLen is the length of a statement's payload: the domain, the
// height, the block ID, the state root and the P-chain height.
const PayloadLen = len(Domain) + 8 + 32 + 32 + 8

// ErrNotStatement means a warp message's payload is not a certificate
// statement (wrong length or domain).
var ErrNotStatement = errcode.New(errcode.InvalidParams, "not_statement", "certificate: the message is not a certificate statement")

// Statement is what a validator signs once it accepted a block: the
// network and chain (the warp message's envelope), the block's height, ID
// and state root, and the P-chain height whose validator set certifies it.
type Statement struct {
	NetworkID    uint32 `json:"networkID"`
	ChainID      ids.ID `json:"chainID"`
	Height       uint64 `json:"height"`
	BlockID      ids.ID `json:"blockID"`
	StateRoot    ids.ID `json:"stateRoot"`
	PChainHeight uint64 `json:"pChainHeight"`
}

// Payload is the statement's canonical encoding inside the warp message:
//
//	Domain | u64 height | [32] block ID | [32] state root | u64 P-chain height
func (s Statement) Payload() []byte {
	w := wire.Writer{B: make([]byte, 0, PayloadLen)}
	w.Raw([]byte(Domain))
	w.U64(s.Height)
	w.Raw(s.BlockID[:])
	w.Raw(s.StateRoot[:])
	w.U64(s.PChainHeight)
	return w.B
}

// Message is the warp unsigned message validators sign: avalanchego's
// signer signs only messages of its own network and chain.
func (s Statement) Message() (*warp.UnsignedMessage, error) {
	return warp.NewUnsignedMessage(s.NetworkID, s.ChainID, s.Payload())
}

// ParseMessage reads a statement back from a warp message, accepting only
// the payload Payload would produce.
func ParseMessage(m *warp.UnsignedMessage) (Statement, error) {
	p := m.Payload
	if len(p) != PayloadLen || !bytes.HasPrefix(p, []byte(Domain)) {
		return Statement{}, fmt.Errorf("%w: %d-byte payload", ErrNotStatement, len(p))
	}
	s := Statement{NetworkID: m.NetworkID, ChainID: m.SourceChainID}
	r := wire.Reader{B: p[len(Domain):]}
	s.Height = r.U64()
	r.Fixed(s.BlockID[:])
	r.Fixed(s.StateRoot[:])
	s.PChainHeight = r.U64()
	if err := r.Done(); err != nil {
		return Statement{}, errors.Join(ErrNotStatement, err)
	}
	return s, nil
}
