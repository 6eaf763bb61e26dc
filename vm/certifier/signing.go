package certifier

import (
	"context"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/network/p2p/acp118"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"

	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/vm/block"
)

// Codes of the refusals a node answers signature requests with. Only
// CodeNotAcceptedYet is worth asking again.
const (
	// CodeNotStatement: the message is not a certificate statement of this
	// chain.
	CodeNotStatement int32 = 1
	// CodeNotAcceptedYet: this node has not accepted a block at the height.
	CodeNotAcceptedYet int32 = 2
	// CodeConflicts: this node accepted a different block, state root or
	// P-chain height at the height. It never signs such a statement.
	CodeConflicts int32 = 3
	// CodeNoContext: the block carries no P-chain height, so no validator
	// set certifies it (a later block's certificate covers it).
	CodeNoContext int32 = 4
)

// Blocks is the accepted chain as the signing side reads it.
type Blocks interface {
	// AcceptedAt is the accepted block at height, database.ErrNotFound
	// above the last accepted one.
	AcceptedAt(height uint64) (*block.Block, error)
}

// Statement is the certificate statement of an accepted block on this
// chain. A block without a P-chain height has none.
func Statement(networkID uint32, chainID ids.ID, b *block.Block) (certificate.Statement, bool) {
	if !b.HasPChainHeight {
		return certificate.Statement{}, false
	}
	return certificate.Statement{
		NetworkID: networkID, ChainID: chainID, Height: b.Height,
		BlockID: b.ID(), StateRoot: b.StateRoot, PChainHeight: b.PChainHeight,
	}, true
}

// signing decides what this node signs: the statement of a block it has
// itself accepted, exactly as it accepted it, and nothing else.
type signing struct {
	networkID uint32
	chainID   ids.ID
	blocks    Blocks
}

var _ acp118.Verifier = signing{}

// Verify is acp118's question: may this node sign msg?
func (s signing) Verify(_ context.Context, msg *warp.UnsignedMessage, _ []byte) *common.AppError {
	if err := s.check(msg); err != nil {
		var appErr *common.AppError
		if errors.As(err, &appErr) {
			return appErr
		}
		return &common.AppError{Code: CodeNotStatement, Message: err.Error()}
	}
	return nil
}

func (s signing) check(msg *warp.UnsignedMessage) error {
	if msg.NetworkID != s.networkID || msg.SourceChainID != s.chainID {
		return &common.AppError{Code: CodeNotStatement, Message: "a message of another network or chain"}
	}
	st, err := certificate.ParseMessage(msg)
	if err != nil {
		return err
	}
	b, err := s.blocks.AcceptedAt(st.Height)
	if errors.Is(err, database.ErrNotFound) {
		return &common.AppError{Code: CodeNotAcceptedYet, Message: fmt.Sprintf("no block accepted at height %d yet", st.Height)}
	}
	if err != nil {
		return err
	}
	mine, ok := Statement(s.networkID, s.chainID, b)
	switch {
	case !ok:
		return &common.AppError{Code: CodeNoContext, Message: fmt.Sprintf("block %d carries no P-chain height", st.Height)}
	case mine != st:
		return &common.AppError{Code: CodeConflicts, Message: fmt.Sprintf("accepted block %s at height %d (state root %s, P-chain height %d) differs from the statement",
			mine.BlockID, mine.Height, mine.StateRoot, mine.PChainHeight)}
	}
	return nil
}
