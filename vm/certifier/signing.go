package certifier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/network/p2p"
	"github.com/ava-labs/avalanchego/network/p2p/acp118"
	"github.com/ava-labs/avalanchego/proto/pb/sdk"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"google.golang.org/protobuf/proto"

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

// Rule is another kind of Warp message this node signs over the same
// ACP-118 protocol (one handler per protocol ID), told apart from
// certificate statements by its payload: the validator manager's removals
// (package manager). Its Verify judges only the messages it Claims.
type Rule interface {
	acp118.Verifier
	// Claims reports whether msg's payload is of the rule's kind. A
	// statement's payload is never claimed: statements go to the
	// certificate rule first.
	Claims(msg *warp.UnsignedMessage) bool
}

// signing decides what this node signs: the statement of a block it has
// itself accepted, exactly as it accepted it, and what one of its rules
// allows (a message a rule claims); nothing else.
type signing struct {
	networkID uint32
	chainID   ids.ID
	blocks    Blocks
	rules     []Rule
}

var _ acp118.Verifier = signing{}

// Verify is acp118's question: may this node sign msg? A certificate
// statement, or a message no rule claims, is judged as a statement;
// another goes to the rule that claims it.
func (s signing) Verify(ctx context.Context, msg *warp.UnsignedMessage, justification []byte) *common.AppError {
	if r := s.ruleOf(msg); r != nil {
		return r.Verify(ctx, msg, justification)
	}
	if err := s.check(msg); err != nil {
		var appErr *common.AppError
		if errors.As(err, &appErr) {
			return appErr
		}
		return &common.AppError{Code: CodeNotStatement, Message: err.Error()}
	}
	return nil
}

// ruleOf is the rule that judges msg: nil for a certificate statement or
// a message no rule claims.
func (s signing) ruleOf(msg *warp.UnsignedMessage) Rule {
	if bytes.HasPrefix(msg.Payload, []byte(certificate.Domain)) {
		return nil
	}
	for _, r := range s.rules {
		if r.Claims(msg) {
			return r
		}
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

// signatureHandler is the ACP-118 handler of a node with rules beside
// certificate statements: statements' signatures are cached (an accepted
// block never changes), the rules' never are (what a rule allows changes
// with the accepted state and this node's view: a removal signed while the
// validator was gone is not signed again once it is back). Both judge with
// the same verifier.
type signatureHandler struct {
	p2p.NoOpHandler
	cached, fresh p2p.Handler
	signing       signing
}

func (h signatureHandler) AppRequest(ctx context.Context, nodeID ids.NodeID, deadline time.Time, request []byte) ([]byte, *common.AppError) {
	if h.signing.ruleOf(requestedMessage(request)) != nil {
		return h.fresh.AppRequest(ctx, nodeID, deadline, request)
	}
	return h.cached.AppRequest(ctx, nodeID, deadline, request)
}

// requestedMessage is the unsigned message of a signature request (an
// empty one when it does not parse: the handler then refuses it itself).
func requestedMessage(request []byte) *warp.UnsignedMessage {
	var req sdk.SignatureRequest
	if err := proto.Unmarshal(request, &req); err != nil {
		return &warp.UnsignedMessage{}
	}
	msg, err := warp.ParseUnsignedMessage(req.Message)
	if err != nil {
		return &warp.UnsignedMessage{}
	}
	return msg
}
